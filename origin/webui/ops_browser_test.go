package webui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestOpsInTheBrowser clicks through an administrator's pages: creates a
// webhook to a real receiver, sends it a test and finds the delivery
// succeeded on its deliveries page; registers an edge node and sees its
// credential once, gives it a repository, deregisters it (asked first);
// and opens the cluster page with this origin as the leader.
func TestOpsInTheBrowser(t *testing.T) {
	e := startOps(t)
	rcv := newReceiver(t)
	libs := e.CreateRepo("libs", "generic", false)
	b := newBrowser(t, e.URL)

	b.do(chromedp.Navigate(e.URL+"/ui/login"), chromedp.WaitVisible(chromedp.ID("sign-in")))
	b.do(then("#new-repository", append(fill("username", "admin", "password", origintest.AdminPassword),
		chromedp.Click(chromedp.ID("sign-in")))...)...)

	// Settings > Webhooks.
	b.do(then("#new-webhook", chromedp.Click(chromedp.CSS(`nav a[href="/ui/settings/webhooks"]`)))...)
	if c := b.text(".crumbs"); c != "Settings" {
		t.Errorf("the webhooks page's crumb: %q", c)
	}
	b.shot("webhooks-empty")
	b.do(then("#create-webhook", chromedp.Click(chromedp.ID("new-webhook")))...)
	b.do(append(fill("webhook-url", rcv.URL+"/depot", "webhook-description", "CI", "webhook-secret", "browser-s3cret"),
		chromedp.Click(chromedp.ID("event-artifact-uploaded")), chromedp.SetValue(chromedp.ID("filter-format"), "generic"))...)
	b.shot("webhook-new")
	b.do(then("#send-test", chromedp.Click(chromedp.ID("create-webhook")))...)
	if f := b.text(".flash"); !strings.Contains(f, "created") {
		t.Errorf("after creating: %q", f)
	}
	b.shot("webhook")
	b.do(then("#delivery-state", chromedp.Click(chromedp.ID("send-test")))...)
	if f, st := b.text(".flash"), b.text("#delivery-state"); !strings.Contains(f, "succeeded") || st != "succeeded" {
		t.Errorf("after the test: %q, state %q", f, st)
	}
	if got := rcv.all(); len(got) != 1 || got[0].header.Get("X-Webhook-Event") != "webhook.test" || !signed(got[0], "browser-s3cret") {
		t.Errorf("the receiver got %+v", got)
	}
	if body := b.text("#delivery-body"); !strings.Contains(body, `"event": "webhook.test"`) {
		t.Errorf("the delivery's body: %q", body)
	}
	b.shot("delivery")
	b.do(then("#deliveries", chromedp.Click(chromedp.CSS(`.crumbs a[href$="/deliveries"]`)))...)
	if st := b.text("#deliveries td.state"); st != "succeeded" || b.count("#deliveries tbody tr") != 1 {
		t.Errorf("the deliveries page: %q, %d rows", st, b.count("#deliveries tbody tr"))
	}
	b.shot("deliveries")
	b.do(then("#webhooks", chromedp.Click(chromedp.CSS(`.crumbs a[href="/ui/settings/webhooks"]`)))...)
	if row := b.text("#webhooks tbody tr"); !strings.Contains(row, rcv.URL+"/depot") || !strings.Contains(row, "HTTP 202") {
		t.Errorf("the webhooks list: %q", row)
	}
	b.shot("webhooks")

	// Edge nodes.
	b.do(then("#register-edge", chromedp.Click(chromedp.CSS(`nav a[href="/ui/edges"]`)))...)
	b.do(fill("edge-name", "near-ci", "edge-url", "http://10.0.0.5:8081", "edge-region", "eu-west")...)
	b.shot("edges")
	b.do(then("#edge-token", chromedp.Click(chromedp.ID("register-edge")))...)
	token := b.text("#edge-token")
	command := strings.ReplaceAll(b.text("#edge-command"), " \\\n  ", " ")
	if !strings.HasPrefix(token, "dpe_") || !strings.HasPrefix(command, "DEPOT_NODE_TOKEN="+token+" depot edge --origin "+e.URL+" --node-id ") {
		t.Fatalf("the credential %q, the command %q", token, command)
	}
	b.shot("edge-registered")
	b.do(chromedp.SetValue(chromedp.ID("assign-repository"), libs))
	b.do(then(".flash", chromedp.Click(chromedp.ID("assign")))...)
	if r := b.text("#edge-repositories"); !strings.Contains(r, "libs") || b.count("#edge-token") != 0 || strings.Contains(b.text("main"), token) {
		t.Errorf("after assigning: %q (the credential shown again?)", r)
	}
	id := strings.TrimPrefix(b.location(), e.URL+"/ui/edges/")
	report := map[string]any{"applied_index": 1, "version": "browser-test"}
	e.Do("POST", "/api/v1/edge-nodes/"+id+"/heartbeat", "Bearer "+token, report).Want(200)
	b.open("/ui/edges")
	if st, v := b.text("#edges td.status"), b.text("#edges tbody tr"); !strings.HasPrefix(st, "online") || !strings.Contains(v, "browser-test") ||
		!strings.Contains(v, "libs") {
		t.Errorf("after a report the node is %q: %q", st, v)
	}
	b.shot("edges-list")
	b.do(then("#deregister-edge", chromedp.Click(chromedp.CSS(`#edges a[href="/ui/edges/`+id+`"]`)))...)
	b.shot("edge-assigned")
	b.do(then("#register-edge", chromedp.Click(chromedp.ID("deregister-edge")))...)
	if d := b.takeDialogs(); len(d) != 1 || !strings.Contains(d[0], "near-ci") {
		t.Errorf("deregistering asked %q", d)
	}
	if b.count("#edges") != 0 || !strings.Contains(b.text(".flash"), "deregistered") {
		t.Error("the node is still listed")
	}
	e.Do("POST", "/api/v1/edge-nodes/"+id+"/heartbeat", "Bearer "+token, report).Want(401)

	// The cluster.
	b.do(then("#cluster-members", chromedp.Click(chromedp.CSS(`nav a[href="/ui/cluster"]`)))...)
	if role := b.text("#cluster-members td.role"); role != "leader" || b.count("#cluster-members tbody tr") != 1 {
		t.Errorf("the cluster: role %q, %d members", role, b.count("#cluster-members tbody tr"))
	}
	b.shot("cluster")
	if d := b.takeDialogs(); len(d) != 0 {
		t.Errorf("unexpected dialogs: %q", d)
	}
	b.clean()
}
