package webui_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/meta"
)

// startOps is an origin whose webhooks may reach the test's receivers on
// loopback, and whose delivery loop looks for work often.
func startOps(t *testing.T) *origintest.Env {
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.Webhooks.AllowPrivate = true
		c.Webhooks.Poll = 20 * time.Millisecond
	}})
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a webhook's receiving end: it answers 202 and keeps what
// it was sent.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), b})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// signed reports whether r carries the signature of its body under secret,
// computed here as a receiver would.
func signed(r received, secret string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(r.body)
	return r.header.Get("X-Webhook-Signature") == "sha256="+hex.EncodeToString(m.Sum(nil))
}

// marked reports whether the element with that id is marked invalid.
func marked(body, id string) bool {
	return regexp.MustCompile(`<[a-z]+ [^>]*id="` + regexp.QuoteMeta(id) + `"[^>]*aria-invalid="true"`).MatchString(body)
}

// strict fails the test for inline script, inline style or an inline
// handler in a page.
func strict(t *testing.T, path string, a answer) {
	t.Helper()
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`<script[^>]*>[^<]`), regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`<style`), regexp.MustCompile(`(?:src|href)="(?:https?:)?//`)} {
		if bad.MatchString(a.body) {
			t.Errorf("%s has %s: %s", path, bad, bad.FindString(a.body))
		}
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(a.body, -1) {
		if ids[m[1]] {
			t.Errorf("%s: the id %s twice", path, m[1])
		}
		ids[m[1]] = true
	}
}

var adminPages = []string{"/settings/webhooks", "/edges", "/cluster", "/cleanup"}

// TestOpsPagesAreForAdmins: a user who is not an administrator is
// refused every page of webhooks, edge nodes and the cluster, reading or
// writing, and is offered none of them; an administrator is offered them.
func TestOpsPagesAreForAdmins(t *testing.T) {
	e := startOps(t)
	rcv := newReceiver(t)
	var hook struct{ ID string }
	e.Do("POST", "/api/v1/webhooks", e.Admin, map[string]any{"url": rcv.URL, "events": []string{"webhook.test"}}).Want(201).JSON(&hook)
	var test struct{ ID string }
	e.Do("POST", "/api/v1/webhooks/"+hook.ID+"/test", e.Admin, nil).Want(200).JSON(&test)
	var edge struct{ ID string }
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://10.0.0.5:8081"}).Want(201).JSON(&edge)
	repo := e.CreateRepo("files", "generic", false)
	e.CreateUser("uma", "user", "uma-password-1")

	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	hk, ed := "/ui/settings/webhooks/"+hook.ID, "/ui/edges/"+edge.ID
	for _, path := range []string{"/ui/settings/webhooks", "/ui/settings/webhooks/new", hk, hk + "/deliveries", hk + "/deliveries/" + test.ID,
		"/ui/edges", ed, "/ui/cluster"} {
		if a := u.get(path); a.status != 403 {
			t.Errorf("a user opening %s: %d", path, a.status)
		}
	}
	posts := map[string]url.Values{
		"/ui/settings/webhooks/new": {"url": {rcv.URL}, "event": {"user.created"}},
		hk:                          {"url": {"http://elsewhere.example/"}, "event": {"user.created"}, "active": {"on"}},
		hk + "/test":                nil, hk + "/deliveries/" + test.ID + "/redeliver": nil, hk + "/delete": nil,
		"/ui/edges":    {"name": {"mine"}, "url": {"http://10.0.0.6:8081"}},
		ed + "/assign": {"repository": {repo}}, ed + "/repositories/" + repo + "/unassign": nil, ed + "/delete": nil,
	}
	for path, f := range posts {
		if a := u.post(path, f); a.status != 403 {
			t.Errorf("a user posting %s: %d", path, a.status)
		}
	}
	var hooks struct{ Total int }
	e.Do("GET", "/api/v1/webhooks", e.Admin, nil).Want(200).JSON(&hooks)
	var edges struct{ Total int }
	e.Do("GET", "/api/v1/edge-nodes", e.Admin, nil).Want(200).JSON(&edges)
	var h struct{ URL string }
	e.Do("GET", "/api/v1/webhooks/"+hook.ID, e.Admin, nil).Want(200).JSON(&h)
	if hooks.Total != 1 || edges.Total != 1 || h.URL != rcv.URL || len(rcv.all()) != 1 {
		t.Errorf("a user's refused forms changed something: %d webhooks, %d edges, url %s, %d deliveries", hooks.Total, edges.Total, h.URL, len(rcv.all()))
	}
	list := u.get("/ui/repositories")
	for _, p := range adminPages {
		if strings.Contains(list.body, `href="/ui`+p+`"`) {
			t.Errorf("a user is offered %s", p)
		}
	}

	a := newForm(t, e.URL)
	a.signIn("admin", origintest.AdminPassword)
	list = a.get("/ui/repositories")
	for _, p := range adminPages {
		if !strings.Contains(list.body, `href="/ui`+p+`"`) {
			t.Errorf("an administrator is not offered %s", p)
		}
		if page := a.get("/ui" + p); page.status != 200 || !strings.Contains(page.body, `href="/ui`+p+`" aria-current="page"`) {
			t.Errorf("%s: %d, or not marked current", p, page.status)
		}
	}
}

// TestWebhookPages: an administrator creates a webhook on the page to a
// real receiver (a wrong URL or no event is refused on the form, the
// field marked and what was typed kept); its secret is never shown back;
// "Send test" delivers webhook.test signed with it and shows the
// outcome; the deliveries page lists the delivery, its page shows the
// body indented, "Redeliver" makes a second attempt; an edit changes the
// events and keeps or removes the secret; delete removes it.
func TestWebhookPages(t *testing.T) {
	e := startOps(t)
	rcv := newReceiver(t)
	repo := e.CreateRepo("files", "generic", false)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)

	blank := p.get("/ui/settings/webhooks/new")
	strict(t, "new webhook", blank)
	for _, name := range meta.EventNames {
		if !strings.Contains(blank.body, `name="event" value="`+name+`"`) {
			t.Errorf("the form offers no checkbox for %s", name)
		}
	}
	if !strings.Contains(blank.body, `<p class="crumbs">Settings`) {
		t.Error("the page is not under Settings")
	}

	a := p.post("/ui/settings/webhooks/new", url.Values{"url": {"ftp://files.example/hook"}, "event": {"artifact.uploaded"},
		"description": {"kept <b>here</b>"}})
	if a.status != 400 || !marked(a.body, "webhook-url") || !strings.Contains(a.body, "kept &lt;b&gt;here&lt;/b&gt;") ||
		!strings.Contains(a.body, `value="artifact.uploaded" checked`) {
		t.Fatalf("a wrong URL: %d\n%s", a.status, a.body)
	}
	if a := p.post("/ui/settings/webhooks/new", url.Values{"url": {rcv.URL}}); a.status != 400 || !marked(a.body, "event-all") {
		t.Fatalf("no event: %d\n%s", a.status, a.body)
	}

	a = p.post("/ui/settings/webhooks/new", url.Values{"url": {rcv.URL + "/hook"}, "event": {"artifact.uploaded", "artifact.deleted"},
		"secret": {"s3cret-of-the-hook"}, "repository": {repo}, "format": {"generic"}, "active": {"on"}, "description": {"CI"}})
	if a.status != 303 || !strings.HasPrefix(a.location, "/ui/settings/webhooks/") {
		t.Fatalf("creating: %d %s\n%s", a.status, a.location, a.body)
	}
	id := strings.TrimPrefix(a.location, "/ui/settings/webhooks/")
	type webhookJSON struct {
		URL       string   `json:"url"`
		Events    []string `json:"events"`
		HasSecret bool     `json:"has_secret"`
		Active    bool     `json:"active"`
		Filters   struct {
			RepositoryID string `json:"repository_id"`
			Format       string `json:"format"`
		} `json:"filters"`
	}
	hook := func() (h webhookJSON) {
		e.Do("GET", "/api/v1/webhooks/"+id, e.Admin, nil).Want(200).JSON(&h)
		return h
	}
	h := hook()
	if h.URL != rcv.URL+"/hook" || strings.Join(h.Events, ",") != "artifact.uploaded,artifact.deleted" || !h.HasSecret || !h.Active ||
		h.Filters.RepositoryID != repo || h.Filters.Format != "generic" {
		t.Fatalf("the webhook made: %+v", h)
	}
	page := p.get(a.location)
	strict(t, "webhook", page)
	list := p.get("/ui/settings/webhooks")
	strict(t, "webhooks", list)
	for _, b := range []string{page.body, list.body} {
		if strings.Contains(b, "s3cret-of-the-hook") {
			t.Fatal("the secret is shown back")
		}
	}
	if !strings.Contains(list.body, rcv.URL+"/hook") || !strings.Contains(list.body, "<strong>files</strong>") || !strings.Contains(list.body, "none yet") {
		t.Errorf("the list:\n%s", list.body)
	}

	// Send test: the receiver gets webhook.test, signed; the answer shows
	// the outcome on the delivery's page.
	a = p.post("/ui/settings/webhooks/"+id+"/test", nil)
	if a.status != 303 || !strings.Contains(a.location, "/deliveries/") {
		t.Fatalf("send test: %d %s\n%s", a.status, a.location, a.body)
	}
	delivery := a.location
	got := rcv.all()
	if len(got) != 1 || got[0].header.Get("X-Webhook-Event") != "webhook.test" || !signed(got[0], "s3cret-of-the-hook") ||
		got[0].header.Get("X-Webhook-ID") != id {
		t.Fatalf("the receiver got %+v", got)
	}
	var env struct {
		Event string `json:"event"`
		Data  struct {
			WebhookID string `json:"webhook_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &env); err != nil || env.Event != "webhook.test" || env.Data.WebhookID != id {
		t.Fatalf("the test body: %s (%v)", got[0].body, err)
	}
	d := p.get(delivery)
	strict(t, "delivery", d)
	if !strings.Contains(d.body, "The test delivery succeeded: HTTP 202.") || !strings.Contains(d.body, `<dd id="delivery-state">succeeded</dd>`) ||
		!strings.Contains(d.body, `<dd id="delivery-attempts">1</dd>`) || !strings.Contains(html.UnescapeString(d.body), `"event": "webhook.test",`) {
		t.Fatalf("the delivery's page:\n%s", d.body)
	}
	deliveries := p.get("/ui/settings/webhooks/" + id + "/deliveries")
	strict(t, "deliveries", deliveries)
	row := regexp.MustCompile(`(?s)<tr>\s*<td><a href="` + regexp.QuoteMeta(delivery) + `"><code>webhook.test</code></a></td>\s*<td class="state">succeeded</td>\s*<td>1</td>\s*<td>202</td>`)
	if !row.MatchString(deliveries.body) {
		t.Fatalf("the deliveries page:\n%s", deliveries.body)
	}
	if list := p.get("/ui/settings/webhooks"); !strings.Contains(list.body, "HTTP 202") {
		t.Errorf("the list does not show the last delivery's status:\n%s", list.body)
	}

	// Redeliver: one more attempt, of the same delivery.
	if a := p.post(delivery+"/redeliver", nil); a.status != 303 || a.location != delivery {
		t.Fatalf("redeliver: %d %s", a.status, a.location)
	}
	got = rcv.all()
	did := delivery[strings.LastIndex(delivery, "/")+1:]
	if len(got) != 2 || got[1].header.Get("X-Webhook-Delivery") != did+".2" || string(got[1].body) != string(got[0].body) {
		t.Fatalf("after redeliver the receiver got %d, the last %v", len(got), got[len(got)-1].header)
	}
	if d := p.get(delivery); !strings.Contains(d.body, `<dd id="delivery-attempts">2</dd>`) || !strings.Contains(d.body, "The new attempt succeeded") {
		t.Errorf("after redeliver:\n%s", d.body)
	}

	// An edit changes the events and keeps the secret left empty; then
	// removes it.
	edit := url.Values{"url": {rcv.URL + "/hook"}, "event": {"repository.created"}, "repository": {""}, "format": {"generic"}, "active": {"on"}}
	if a := p.post("/ui/settings/webhooks/"+id, edit); a.status != 303 {
		t.Fatalf("an edit: %d\n%s", a.status, a.body)
	}
	h = hook()
	if strings.Join(h.Events, ",") != "repository.created" || !h.HasSecret || h.Filters.RepositoryID != "" || h.Filters.Format != "generic" {
		t.Fatalf("after the edit: %+v", h)
	}
	edit.Set("url", "not a url")
	if a := p.post("/ui/settings/webhooks/"+id, edit); a.status != 400 || !marked(a.body, "webhook-url") || !strings.Contains(a.body, `value="not a url"`) {
		t.Fatalf("an edit with a wrong URL: %d\n%s", a.status, a.body)
	}
	edit.Set("url", rcv.URL+"/hook")
	edit.Set("clear_secret", "on")
	edit.Del("active")
	if a := p.post("/ui/settings/webhooks/"+id, edit); a.status != 303 {
		t.Fatalf("removing the secret: %d\n%s", a.status, a.body)
	}
	h = hook()
	if h.HasSecret || h.Active {
		t.Fatalf("after removing the secret and deactivating: %+v", h)
	}
	p.post("/ui/settings/webhooks/"+id+"/test", nil) // an inactive webhook gets its test
	if got = rcv.all(); len(got) != 3 || got[2].header.Get("X-Webhook-Signature") != "" {
		t.Errorf("a test without a secret: %d deliveries, signature %q", len(got), got[len(got)-1].header.Get("X-Webhook-Signature"))
	}

	if a := p.post("/ui/settings/webhooks/"+id+"/delete", nil); a.status != 303 || a.location != "/ui/settings/webhooks" {
		t.Fatalf("delete: %d %s", a.status, a.location)
	}
	e.Do("GET", "/api/v1/webhooks/"+id, e.Admin, nil).Want(404)
	if list := p.get("/ui/settings/webhooks"); !strings.Contains(list.body, "deleted") || strings.Contains(list.body, `id="webhooks"`) {
		t.Errorf("after the delete:\n%s", list.body)
	}
}

var (
	edgeToken   = regexp.MustCompile(`<code id="edge-token" class="secret">(dpe_[^<]+)</code>`)
	edgeCommand = regexp.MustCompile(`<code id="edge-command">([^<]+)</code>`)
)

// TestEdgePages: an administrator registers an edge node on the page (a
// wrong name refused on the form); its credential and the command that
// starts the node are in that answer only, and the credential works;
// the node's report shows in the list; a repository is assigned and
// unassigned; deregistering stops the credential at once.
func TestEdgePages(t *testing.T) {
	e := startOps(t)
	libs := e.CreateRepo("libs", "generic", false)
	e.CreateRepo("js", "npm", false)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	strict(t, "edges", p.get("/ui/edges"))

	a := p.post("/ui/edges", url.Values{"name": {"../near"}, "url": {"http://10.0.0.5:8081"}, "region": {"eu-west"}})
	if a.status != 400 || !marked(a.body, "edge-name") || !strings.Contains(a.body, `value="eu-west"`) {
		t.Fatalf("a wrong name: %d\n%s", a.status, a.body)
	}
	a = p.post("/ui/edges", url.Values{"name": {"near-ci"}, "url": {"http://10.0.0.5:8081"}, "region": {"eu-west"}})
	strict(t, "registered", a)
	tok, cmd := edgeToken.FindStringSubmatch(a.body), edgeCommand.FindStringSubmatch(a.body)
	if a.status != 201 || tok == nil || cmd == nil {
		t.Fatalf("registering: %d\n%s", a.status, a.body)
	}
	token := tok[1]
	var nodes struct {
		EdgeNodes []struct{ ID, Name string } `json:"edge_nodes"`
	}
	e.Do("GET", "/api/v1/edge-nodes", e.Admin, nil).Want(200).JSON(&nodes)
	if len(nodes.EdgeNodes) != 1 || nodes.EdgeNodes[0].Name != "near-ci" {
		t.Fatalf("nodes: %+v", nodes)
	}
	id := nodes.EdgeNodes[0].ID
	command := strings.ReplaceAll(html.UnescapeString(cmd[1]), " \\\n  ", " ") // one line, as a shell reads it
	if want := "DEPOT_NODE_TOKEN=" + token + " depot edge --origin " + e.URL + " --node-id " + id + " --listen :8081 --cache-dir <dir>"; command != want {
		t.Errorf("the command %q, want %q", command, want)
	}
	page := p.get("/ui/edges/" + id)
	strict(t, "edge", page)
	for _, b := range []string{page.body, p.get("/ui/edges").body} {
		if strings.Contains(b, token) || strings.Contains(b, "edge-token") {
			t.Fatal("the credential is shown again")
		}
	}

	report := map[string]any{"applied_index": 3, "cached_bytes": 5 << 20, "missing_blobs": 2, "version": "v9.9.9-test"}
	e.Do("POST", "/api/v1/edge-nodes/"+id+"/heartbeat", "Bearer "+token, report).Want(200)
	list := p.get("/ui/edges")
	row := regexp.MustCompile(`(?s)<a href="/ui/edges/` + id + `">near-ci</a>.*?<td class="status">online.*?<td>eu-west</td>.*?<td>5.0 MiB</td>\s*<td>2</td>\s*<td>3</td>\s*<td>v9.9.9-test</td>\s*<td>none</td>`)
	if !row.MatchString(list.body) {
		t.Fatalf("the list after a report:\n%s", list.body)
	}

	if a := p.post("/ui/edges/"+id+"/assign", url.Values{}); a.status != 400 || !marked(a.body, "assign-repository") {
		t.Errorf("assigning nothing: %d\n%s", a.status, a.body)
	}
	if a := p.post("/ui/edges/"+id+"/assign", url.Values{"repository": {libs}}); a.status != 303 || !strings.HasSuffix(a.location, "/ui/edges/"+id) {
		t.Fatalf("assign: %d %s\n%s", a.status, a.location, a.body)
	}
	var node struct {
		RepositoryIDs []string `json:"repository_ids"`
	}
	e.Do("GET", "/api/v1/edge-nodes/"+id, e.Admin, nil).Want(200).JSON(&node)
	if len(node.RepositoryIDs) != 1 || node.RepositoryIDs[0] != libs {
		t.Fatalf("after assigning: %v", node.RepositoryIDs)
	}
	page = p.get("/ui/edges/" + id)
	if !strings.Contains(page.body, "libs assigned to near-ci") || !strings.Contains(page.body, `id="unassign-libs"`) ||
		strings.Contains(page.body, `<option value="`+libs+`"`) || !strings.Contains(page.body, ">js (npm)</option>") {
		t.Fatalf("the node's page after assigning:\n%s", page.body)
	}
	if a := p.post("/ui/edges/"+id+"/repositories/"+libs+"/unassign", nil); a.status != 303 {
		t.Fatalf("unassign: %d\n%s", a.status, a.body)
	}
	e.Do("GET", "/api/v1/edge-nodes/"+id, e.Admin, nil).Want(200).JSON(&node)
	if len(node.RepositoryIDs) != 0 {
		t.Fatalf("after unassigning: %v", node.RepositoryIDs)
	}

	if a := p.post("/ui/edges/"+id+"/delete", nil); a.status != 303 || a.location != "/ui/edges" {
		t.Fatalf("deregister: %d %s", a.status, a.location)
	}
	e.Do("POST", "/api/v1/edge-nodes/"+id+"/heartbeat", "Bearer "+token, report).WantError(401, "UNAUTHORIZED")
	if list := p.get("/ui/edges"); !strings.Contains(list.body, "near-ci deregistered") || strings.Contains(list.body, "/ui/edges/"+id) {
		t.Errorf("after deregistering:\n%s", list.body)
	}
}

// TestClusterPage: the one origin is the leader, a cluster of one may lose
// no voter, and no directory is shown when none is set up; with one, its
// server and syncs are.
func TestClusterPage(t *testing.T) {
	e := startOps(t)
	var view struct {
		LeaderID string `json:"leader_id"`
	}
	e.Do("GET", "/api/v1/admin/cluster", e.Admin, nil).Want(200).JSON(&view)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/cluster")
	strict(t, "cluster", a)
	row := regexp.MustCompile(`(?s)<tr>\s*<td><code>` + regexp.QuoteMeta(view.LeaderID) + `</code></td>.*?<td class="role">leader</td>\s*<td>yes</td>`)
	if a.status != 200 || view.LeaderID == "" || !row.MatchString(a.body) || !strings.Contains(a.body, `<dd id="cluster-leader"><code>`+view.LeaderID+`</code>`) ||
		!strings.Contains(a.body, `<dd id="fault-tolerance">0:`) || strings.Count(a.body, `<td class="role">`) != 1 {
		t.Fatalf("the cluster page (leader %s):\n%s", view.LeaderID, a.body)
	}
	if strings.Contains(a.body, "Directory") {
		t.Error("a directory is shown where none is set up")
	}

	d := clienttest.StartWithDirectory(t)
	q := newForm(t, d.URL)
	q.signIn("admin", origintest.AdminPassword)
	a = q.get("/ui/cluster")
	var dir struct {
		LDAP struct {
			URL string `json:"url"`
		} `json:"ldap"`
	}
	d.Do("GET", "/api/v1/admin/directory", d.Admin, nil).Want(200).JSON(&dir)
	if dir.LDAP.URL == "" || !strings.Contains(a.body, `<h2 id="directory-h">Directory</h2>`) || !strings.Contains(a.body, "<dd>"+dir.LDAP.URL+"</dd>") {
		t.Errorf("the directory (%s) is not shown:\n%s", dir.LDAP.URL, a.body)
	}
}
