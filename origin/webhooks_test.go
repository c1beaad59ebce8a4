package origin_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// startHooks is an origin whose webhooks may reach the test's receivers
// on loopback, and whose delivery loop looks for work often.
func startHooks(t *testing.T, tweak func(*origin.Config)) *origintest.Env {
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.Webhooks.AllowPrivate = true
		c.Webhooks.Poll = 20 * time.Millisecond
		if tweak != nil {
			tweak(c)
		}
	}})
}

func createHook(e *origintest.Env, body map[string]any) string {
	var h struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	e.Do("POST", "/api/v1/webhooks", e.Admin, body).Want(201).JSON(&h)
	return h.ID
}

type deliveryJSON struct {
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	State       string     `json:"state"`
	StatusCode  int        `json:"status_code"`
	Attempts    int        `json:"attempts"`
	DeliveredAt *time.Time `json:"delivered_at"`
	NextRetryAt *time.Time `json:"next_retry_at"`
	Error       string     `json:"error"`
}

func deliveries(e *origintest.Env, hook string) []deliveryJSON {
	var out struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}
	e.Do("GET", "/api/v1/webhooks/"+hook+"/deliveries?limit=100", e.Admin, nil).Want(200).JSON(&out)
	return out.Deliveries
}

// TestWebhookEvents drives every event a user can cause through its real
// trigger and checks what a real receiver gets: the envelope, the spec's
// headers, a signature it verifies, the payload of each event.
func TestWebhookEvents(t *testing.T) {
	e := startHooks(t, nil)
	rcv := clienttest.NewReceiver(t, "s3cret")
	hook := createHook(e, map[string]any{"url": rcv.URL, "events": []string{"*"}, "secret": "s3cret"})

	repo := e.CreateRepo("files", "generic", false)
	alice := e.CreateUser("alice", "user", "alice-Password-1")
	e.Grant(repo, alice, false, "read", "write", "delete")
	tok := e.Login("alice", "alice-Password-1")
	body := "hello events"
	e.DoHeader("PUT", "/generic/files/tool/1.0/tool.txt", tok, body, nil).Want(201)
	e.Do("GET", "/generic/files/tool/1.0/tool.txt", tok, nil).Want(200)
	e.Do("DELETE", "/generic/files/tool/1.0/tool.txt", tok, nil).Want(204)
	e.Do("DELETE", "/api/v1/repositories/"+repo, e.Admin, nil).Want(204)
	var test deliveryJSON
	e.Do("POST", "/api/v1/webhooks/"+hook+"/test", e.Admin, nil).Want(200).JSON(&test)
	if test.Event != "webhook.test" || test.StatusCode != 204 || test.State != "succeeded" || test.Attempts != 1 || test.DeliveredAt == nil {
		t.Errorf("test delivery answered %+v", test)
	}

	got := rcv.Wait(t, 7, 10*time.Second)
	var me struct {
		ID string `json:"id"`
	}
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200).JSON(&me)
	admin := map[string]any{"user_id": me.ID, "username": "admin"}
	byEvent := map[string]clienttest.Delivery{}
	seen := map[string]bool{}
	for _, d := range got {
		byEvent[d.Event] = d
		h := d.Header
		if !d.SignatureOK || h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "Registry-Webhook/1.0" ||
			h.Get("X-Webhook-ID") != hook || h.Get("X-Webhook-Event") != d.Event || h.Get("X-Webhook-Delivery") == "" {
			t.Errorf("%s delivery headers: %v (signature ok %v)", d.Event, h, d.SignatureOK)
		}
		if seen[h.Get("X-Webhook-Delivery")] {
			t.Errorf("X-Webhook-Delivery %s twice", h.Get("X-Webhook-Delivery"))
		}
		seen[h.Get("X-Webhook-Delivery")] = true
		if time.Since(d.Timestamp) > time.Minute {
			t.Errorf("%s timestamp %s", d.Event, d.Timestamp)
		}
	}
	sum := sha256.Sum256([]byte(body))
	want := map[string]map[string]any{
		"user.created": {"user_id": alice, "username": "alice", "role": "user",
			"created_by": admin},
		"repository.created": {"repository_id": repo, "repository_name": "files", "format": "generic",
			"created_by": admin},
		"artifact.uploaded": {"repository_id": repo, "repository_name": "files", "package_name": "tool", "version": "1.0",
			"format": "generic", "size_bytes": float64(len(body)), "checksum_sha256": hex.EncodeToString(sum[:]),
			"uploader": map[string]any{"user_id": alice, "username": "alice"}},
		"artifact.downloaded": {"repository_name": "files", "package_name": "tool", "version": "1.0",
			"downloader": map[string]any{"user_id": alice, "username": "alice", "ip_address": "127.0.0.1"}},
		"artifact.deleted": {"repository_name": "files", "package_name": "tool", "version": "1.0",
			"deleted_by": map[string]any{"user_id": alice, "username": "alice"}},
		"repository.deleted": {"repository_id": repo, "repository_name": "files", "format": "generic",
			"deleted_by": admin},
		"webhook.test": {"webhook_id": hook, "message": "This is a test delivery from Depot."},
	}
	var artifactID any
	for name, fields := range want {
		d, ok := byEvent[name]
		if !ok {
			t.Errorf("no %s delivered", name)
			continue
		}
		for k, v := range fields {
			if fmt.Sprint(d.Data[k]) != fmt.Sprint(v) {
				t.Errorf("%s data.%s = %v, want %v", name, k, d.Data[k], v)
			}
		}
		if strings.HasPrefix(name, "artifact.") {
			if artifactID == nil {
				artifactID = d.Data["artifact_id"]
			}
			if d.Data["artifact_id"] == nil || d.Data["artifact_id"] != artifactID {
				t.Errorf("%s artifact_id %v, want the same artifact %v", name, d.Data["artifact_id"], artifactID)
			}
		}
	}
	// The history and the statistics say the same (the receiver may have
	// answered before the attempt's outcome is committed).
	waitFor(t, "every attempt recorded", func() bool {
		for _, d := range deliveries(e, hook) {
			if d.State != "succeeded" {
				return false
			}
		}
		return true
	})
	list := deliveries(e, hook)
	if len(list) != 7 {
		t.Errorf("deliveries: %+v", list)
	}
	var detail struct {
		Stats struct {
			Total      int        `json:"total_deliveries"`
			Successful int        `json:"successful_deliveries"`
			Failed     int        `json:"failed_deliveries"`
			LastAt     *time.Time `json:"last_delivery_at"`
			LastStatus int        `json:"last_delivery_status"`
		} `json:"stats"`
	}
	e.Do("GET", "/api/v1/webhooks/"+hook, e.Admin, nil).Want(200).JSON(&detail)
	if s := detail.Stats; s.Total != 7 || s.Successful != 7 || s.Failed != 0 || s.LastAt == nil || s.LastStatus != 204 {
		t.Errorf("stats %+v", s)
	}
	// A receiver that does not know the secret refuses: the attempt fails.
	other := clienttest.NewReceiver(t, "another secret")
	e.Do("PUT", "/api/v1/webhooks/"+hook, e.Admin, map[string]any{"url": other.URL}).Want(200)
	e.Do("POST", "/api/v1/webhooks/"+hook+"/test", e.Admin, nil).Want(200).JSON(&test)
	if test.StatusCode != 401 || test.State != "failed" || test.NextRetryAt != nil {
		t.Errorf("test against a receiver with another secret: %+v", test)
	}
}

// TestWebhookFiltersAndInactive: an event goes only to the webhooks that
// subscribe to it and whose every filter matches; an inactive webhook gets
// nothing, not even what happened while it was inactive once reactivated.
func TestWebhookFiltersAndInactive(t *testing.T) {
	e := startHooks(t, nil)
	files := e.CreateRepo("files", "generic", false)
	e.CreateRepo("other", "generic", false)
	bob := e.CreateUser("bob", "user", "bob-Password-1")
	e.Grant(files, bob, false, "read", "write")
	byRepo := clienttest.NewReceiver(t, "")
	byUser := clienttest.NewReceiver(t, "")
	npmOnly := clienttest.NewReceiver(t, "")
	deletes := clienttest.NewReceiver(t, "")
	paused := clienttest.NewReceiver(t, "")
	createHook(e, map[string]any{"url": byRepo.URL, "events": []string{"artifact.uploaded"}, "filters": map[string]any{"repository_id": files}})
	createHook(e, map[string]any{"url": byUser.URL, "events": []string{"*"}, "filters": map[string]any{"user_id": bob, "format": "generic"}})
	createHook(e, map[string]any{"url": npmOnly.URL, "events": []string{"*"}, "filters": map[string]any{"format": "npm"}})
	createHook(e, map[string]any{"url": deletes.URL, "events": []string{"artifact.deleted"}})
	pausedID := createHook(e, map[string]any{"url": paused.URL, "events": []string{"*"}, "active": false})

	bobTok := e.Login("bob", "bob-Password-1")
	e.DoHeader("PUT", "/generic/files/a/1/a.txt", e.Admin, "a", nil).Want(201)
	e.DoHeader("PUT", "/generic/other/b/1/b.txt", e.Admin, "b", nil).Want(201)
	e.DoHeader("PUT", "/generic/files/c/1/c.txt", bobTok, "c", nil).Want(201)
	e.Do("PUT", "/api/v1/webhooks/"+pausedID, e.Admin, map[string]any{"active": true}).Want(200)
	e.DoHeader("PUT", "/generic/files/d/1/d.txt", bobTok, "d", nil).Want(201)

	for _, c := range []struct {
		name string
		r    *clienttest.Receiver
		pkgs []string
	}{
		{"repository filter", byRepo, []string{"a", "c", "d"}},
		{"user and format filters", byUser, []string{"c", "d"}},
		{"reactivated", paused, []string{"d"}},
	} {
		// Deliveries run concurrently: the order they arrive in is not
		// the order of the events.
		var pkgs []string
		for _, d := range c.r.Wait(t, len(c.pkgs), 10*time.Second) {
			if d.Event != "artifact.uploaded" {
				t.Errorf("%s: %s delivered", c.name, d.Event)
			}
			pkgs = append(pkgs, fmt.Sprint(d.Data["package_name"]))
		}
		slices.Sort(pkgs)
		if !slices.Equal(pkgs, c.pkgs) {
			t.Errorf("%s: uploads of %v delivered, want %v", c.name, pkgs, c.pkgs)
		}
	}
	byRepo.Quiet(t, 3, 300*time.Millisecond)
	byUser.Quiet(t, 2, 0)
	paused.Quiet(t, 1, 0)
	npmOnly.Quiet(t, 0, 0)
	deletes.Quiet(t, 0, 0)
}

// TestWebhookRetries: a failing receiver is retried after 1 m, 5 m, 30 m,
// 2 h and 6 h (the origin's clock is moved, not waited for), with
// next_retry_at showing while a retry is pending; then the delivery has
// failed, and a redelivery succeeds once the receiver is back.
func TestWebhookRetries(t *testing.T) {
	e := startHooks(t, nil)
	rcv := clienttest.NewReceiver(t, "")
	rcv.Answer(http.StatusInternalServerError, 0)
	hook := createHook(e, map[string]any{"url": rcv.URL, "events": []string{"artifact.uploaded"}})
	e.CreateRepo("files", "generic", false)
	e.DoHeader("PUT", "/generic/files/a/1/a.txt", e.Admin, "a", nil).Want(201)

	delays := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}
	for i, d := range delays {
		rcv.Wait(t, i+1, 10*time.Second)
		waitFor(t, "the attempt recorded", func() bool { return deliveries(e, hook)[0].Attempts == i+1 })
		dl := deliveries(e, hook)[0]
		if dl.State != "pending" || dl.StatusCode != 500 || dl.NextRetryAt == nil || dl.DeliveredAt == nil ||
			dl.NextRetryAt.Sub(*dl.DeliveredAt).Round(time.Second) != d {
			t.Fatalf("after attempt %d: %+v, want a retry %s later", i+1, dl, d)
		}
		// Not before its time.
		e.Clock.Advance(d - 2*time.Second)
		rcv.Quiet(t, i+1, 100*time.Millisecond)
		e.Clock.Advance(2 * time.Second)
		e.Admin = e.Login("admin", origintest.AdminPassword) // the clock moved past the session
	}
	rcv.Wait(t, 6, 10*time.Second)
	waitFor(t, "the last attempt recorded", func() bool { return deliveries(e, hook)[0].Attempts == 6 })
	if dl := deliveries(e, hook)[0]; dl.State != "failed" || dl.NextRetryAt != nil {
		t.Fatalf("after five retries: %+v, want failed with no retry", dl)
	}
	e.Clock.Advance(24 * time.Hour)
	rcv.Quiet(t, 6, 100*time.Millisecond)

	rcv.Answer(http.StatusOK, 0)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	var dl deliveryJSON
	e.Do("POST", "/api/v1/webhooks/"+hook+"/deliveries/"+deliveries(e, hook)[0].ID+"/redeliver", e.Admin, nil).Want(200).JSON(&dl)
	if dl.State != "succeeded" || dl.Attempts != 7 || dl.StatusCode != 200 {
		t.Fatalf("redelivered: %+v", dl)
	}
	got := rcv.Wait(t, 7, time.Second)
	if got[6].Header.Get("X-Webhook-Delivery") == got[5].Header.Get("X-Webhook-Delivery") {
		t.Errorf("a redelivery reused the attempt id %s", got[6].Header.Get("X-Webhook-Delivery"))
	}
	e.Do("POST", "/api/v1/webhooks/"+hook+"/deliveries/nope/redeliver", e.Admin, nil).WantError(404, "NOT_FOUND")
}

// TestWebhookGiveUp: with more retries allowed than a day holds, a
// delivery is given up 24 hours after its event.
func TestWebhookGiveUp(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.MaxRetries = 50 })
	rcv := clienttest.NewReceiver(t, "")
	rcv.Answer(http.StatusBadGateway, 0)
	hook := createHook(e, map[string]any{"url": rcv.URL, "events": []string{"repository.created"}})
	e.CreateRepo("files", "generic", false)
	// 0, 1m, 6m, 36m, 2h36m, 8h36m, 14h36m, 20h36m; the next would be at 26h36m.
	for n := 1; n <= 8; n++ {
		rcv.Wait(t, n, 10*time.Second)
		waitFor(t, "the attempt recorded", func() bool { return deliveries(e, hook)[0].Attempts == n })
		dl := deliveries(e, hook)[0]
		if n == 8 {
			if dl.State != "failed" || dl.NextRetryAt != nil {
				t.Fatalf("attempt 8 at 20h36m: %+v, want given up", dl)
			}
			break
		}
		e.Clock.Advance(dl.NextRetryAt.Sub(*dl.DeliveredAt) + time.Second)
		e.Admin = e.Login("admin", origintest.AdminPassword)
	}
	e.Clock.Advance(7 * time.Hour)
	rcv.Quiet(t, 8, 100*time.Millisecond)
}

// TestWebhookRateLimit: at most WEBHOOK_RATE_LIMIT attempts a minute per
// webhook; the rest wait for the next minute.
func TestWebhookRateLimit(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.RateLimit = 2 })
	rcv := clienttest.NewReceiver(t, "")
	createHook(e, map[string]any{"url": rcv.URL, "events": []string{"artifact.uploaded"}})
	e.CreateRepo("files", "generic", false)
	for i := range 5 {
		e.DoHeader("PUT", fmt.Sprintf("/generic/files/p/%d/f", i), e.Admin, "x", nil).Want(201)
	}
	rcv.Wait(t, 2, 10*time.Second)
	rcv.Quiet(t, 2, 300*time.Millisecond)
	e.Clock.Advance(time.Minute)
	rcv.Wait(t, 4, 10*time.Second)
	rcv.Quiet(t, 4, 300*time.Millisecond)
	e.Clock.Advance(time.Minute)
	rcv.Wait(t, 5, 10*time.Second)
}

// TestEventLog: GET /api/v1/events answers the same envelopes with
// cursors, filtered by type, repository and what the caller may read,
// and waits for the next event when asked to.
func TestEventLog(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.LogDownloads = true })
	mine := e.CreateRepo("mine", "generic", false)
	e.CreateRepo("secret", "generic", false)
	carol := e.CreateUser("carol", "user", "carol-Password-1")
	e.Grant(mine, carol, false, "read")
	e.DoHeader("PUT", "/generic/mine/a/1/a.txt", e.Admin, "a", nil).Want(201)
	e.DoHeader("PUT", "/generic/secret/b/1/b.txt", e.Admin, "b", nil).Want(201)
	type page struct {
		Events []struct {
			Cursor string         `json:"cursor"`
			Event  string         `json:"event"`
			Data   map[string]any `json:"data"`
		} `json:"events"`
		Next string `json:"next_cursor"`
	}
	var all page
	e.Do("GET", "/api/v1/events", e.Admin, nil).Want(200).JSON(&all)
	var names []string
	for _, ev := range all.Events {
		names = append(names, ev.Event)
	}
	if got := strings.Join(names, " "); !strings.HasSuffix(got, "repository.created repository.created user.created artifact.uploaded artifact.uploaded") {
		t.Errorf("admin sees %s", got)
	}
	var fromZero page // since=0 is the oldest, as the edges' feed takes it
	e.Do("GET", "/api/v1/events?since=0", e.Admin, nil).Want(200).JSON(&fromZero)
	if len(fromZero.Events) != len(all.Events) {
		t.Errorf("since=0 answered %d events, without since %d", len(fromZero.Events), len(all.Events))
	}
	carolTok := e.Login("carol", "carol-Password-1")
	var hers page
	e.Do("GET", "/api/v1/events", carolTok, nil).Want(200).JSON(&hers)
	if len(hers.Events) != 2 || hers.Events[0].Event != "repository.created" || hers.Events[1].Data["package_name"] != "a" {
		t.Errorf("carol sees %+v", hers.Events)
	}
	var typed page
	e.Do("GET", "/api/v1/events?types=artifact.uploaded&repository_id="+mine, e.Admin, nil).Want(200).JSON(&typed)
	if len(typed.Events) != 1 || typed.Events[0].Data["package_name"] != "a" {
		t.Errorf("filtered: %+v", typed.Events)
	}
	// Paging by cursor, then a long poll that an upload answers.
	var first page
	e.Do("GET", "/api/v1/events?limit=1", e.Admin, nil).Want(200).JSON(&first)
	var rest page
	e.Do("GET", "/api/v1/events?since="+first.Next, e.Admin, nil).Want(200).JSON(&rest)
	if len(first.Events) != 1 || len(rest.Events) != len(all.Events)-1 || rest.Events[0].Cursor != all.Events[1].Cursor {
		t.Errorf("paging: first %+v, rest %d events", first.Events, len(rest.Events))
	}
	done := make(chan page, 1)
	go func() {
		var p page
		e.Do("GET", "/api/v1/events?wait=20&since="+all.Next, carolTok, nil).Want(200).JSON(&p)
		done <- p
	}()
	time.Sleep(200 * time.Millisecond)
	e.DoHeader("PUT", "/generic/secret/c/1/c.txt", e.Admin, "c", nil).Want(201) // not hers: she keeps waiting
	e.DoHeader("PUT", "/generic/mine/d/1/d.txt", e.Admin, "d", nil).Want(201)
	select {
	case p := <-done:
		if len(p.Events) != 1 || p.Events[0].Data["package_name"] != "d" {
			t.Errorf("long poll answered %+v", p.Events)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll did not answer the upload")
	}
	var latest page
	e.Do("GET", "/api/v1/events?since=latest", e.Admin, nil).Want(200).JSON(&latest)
	if len(latest.Events) != 0 || latest.Next == "" {
		t.Errorf("since=latest: %+v", latest)
	}
	e.Do("GET", "/generic/mine/a/1/a.txt", e.Admin, nil).Want(200)
	waitFor(t, "the download recorded", func() bool {
		var p page
		e.Do("GET", "/api/v1/events?types=artifact.downloaded", carolTok, nil).Want(200).JSON(&p)
		if len(p.Events) == 1 {
			if who, _ := p.Events[0].Data["downloader"].(map[string]any); who["username"] != "admin" || who["ip_address"] != nil {
				t.Errorf("a reader sees the download as %v: the name, not the address", p.Events[0].Data)
			}
			return true
		}
		return false
	})
	e.Do("GET", "/api/v1/events?since=nonsense", e.Admin, nil).WantError(400, "VALIDATION_FAILED")
	e.Do("GET", "/api/v1/events?types=artifact.exploded", e.Admin, nil).WantError(400, "VALIDATION_FAILED")
	e.Do("GET", "/api/v1/events", "", nil).Want(401)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEveryFormatsEvents: the fixture's uploads of every format, its
// reads, and a delete of one artifact of each repository record the
// events with the package and version the REST API shows for them.
func TestEveryFormatsEvents(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.LogDownloads = true })
	repoFormat, names := map[string]string{}, map[string]string{}
	for _, r := range formattest.FixtureRepos {
		names[r[0]] = e.CreateRepo(r[0], r[1], false)
		repoFormat[names[r[0]]] = r[1]
	}
	f := formattest.NewFixture(t)
	auth := "Bearer " + e.Admin
	for _, w := range f.Writes {
		if got := formattest.Fetch(t, e.URL, w, auth); got.Status != w.Want {
			t.Fatalf("%s %s: %d %s", w.Method, w.Path, got.Status, got.Body)
		}
	}
	for _, r := range f.Reads {
		formattest.Fetch(t, e.URL, r, auth)
	}
	// What the REST API says each repository holds.
	type version struct{ pkg, ver string }
	held := map[string]map[version]string{} // repo id -> package version -> an artifact id
	for id := range repoFormat {
		held[id] = map[version]string{}
		var pkgs struct {
			Packages []struct{ Name string } `json:"packages"`
		}
		e.Do("GET", "/api/v1/packages?limit=100&repository_id="+id, e.Admin, nil).Want(200).JSON(&pkgs)
		for _, p := range pkgs.Packages {
			var vs struct {
				Versions []struct {
					Version    string `json:"version"`
					ArtifactID string `json:"artifact_id"`
				} `json:"versions"`
			}
			e.Do("GET", "/api/v1/packages/"+url.PathEscape(p.Name)+"/versions?repository_id="+id, e.Admin, nil).Want(200).JSON(&vs)
			for _, v := range vs.Versions {
				held[id][version{p.Name, v.Version}] = v.ArtifactID
			}
		}
	}
	type ev struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	readAll := func() []ev {
		var out struct {
			Events []ev `json:"events"`
		}
		e.Do("GET", "/api/v1/events?limit=1000", e.Admin, nil).Want(200).JSON(&out)
		return out.Events
	}
	// Downloads are recorded in batches: wait for every repository's.
	downloaded := map[string]bool{}
	waitFor(t, "a download event of every format", func() bool {
		for _, x := range readAll() {
			if x.Event == "artifact.downloaded" {
				downloaded[fmt.Sprint(x.Data["repository_name"])] = true
			}
		}
		return len(downloaded) == len(formattest.FixtureRepos)
	})
	// One delete per repository, through the REST API (the format's own
	// delete where it has one).
	deleted := map[string]bool{}
	for id, vs := range held {
		for _, a := range vs {
			e.Do("DELETE", "/api/v1/artifacts/"+a, e.Admin, nil).Want(204)
			deleted[id] = true
			break
		}
	}
	uploads := map[string]int{}
	deletes := map[string]int{}
	for _, x := range readAll() {
		repoName := fmt.Sprint(x.Data["repository_name"])
		id := names[repoName]
		v := version{fmt.Sprint(x.Data["package_name"]), fmt.Sprint(x.Data["version"])}
		switch x.Event {
		case "artifact.uploaded":
			uploads[repoName]++
			if x.Data["format"] != repoFormat[id] || x.Data["repository_id"] != id {
				t.Errorf("%s upload: format %v, repository %v", repoName, x.Data["format"], x.Data["repository_id"])
			}
			if _, ok := held[id][v]; !ok {
				t.Errorf("%s: upload event of %v, which the API does not list (%v)", repoName, v, held[id])
			}
		case "artifact.downloaded", "artifact.deleted":
			if _, ok := held[id][v]; !ok {
				t.Errorf("%s: %s event of %v, which the API does not list (%v)", repoName, x.Event, v, held[id])
			}
			if x.Event == "artifact.deleted" {
				deletes[repoName]++
			}
		}
	}
	for _, r := range formattest.FixtureRepos {
		if uploads[r[0]] == 0 || deletes[r[0]] != 1 {
			t.Errorf("%s (%s): %d upload events, %d delete events, want some and one", r[0], r[1], uploads[r[0]], deletes[r[0]])
		}
	}
	t.Logf("upload events per repository: %v", uploads)
}

// TestOCITagEvents: the events of an image's life are the user's actions,
// not the registry's bookkeeping: a tag moved to a new manifest is one
// upload (the manifest it left is not "uploaded" again), removing a tag is
// one delete, deleting the untagged manifest by digest another.
func TestOCITagEvents(t *testing.T) {
	e := startHooks(t, nil)
	e.CreateRepo("ctr", "docker", false)
	auth := "Bearer " + e.Admin
	put := func(c formattest.Call) {
		t.Helper()
		if got := formattest.Fetch(t, e.URL, c, auth); got.Status != c.Want {
			t.Fatalf("%s %s: %d %s", c.Method, c.Path, got.Status, got.Body)
		}
	}
	ct := func(v string) map[string]string { return map[string]string{"Content-Type": v} }
	manifest := func(layer string) ([]byte, string) {
		l := []byte(layer)
		put(formattest.Call{Method: "POST", Path: "/v2/ctr/app/blobs/uploads/?digest=" + formattest.SHA256Digest(l), Header: ct("application/octet-stream"), Body: l, Want: 201})
		m := fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
			`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[]}`,
			formattest.SHA256Digest(l), len(l))
		return m, formattest.SHA256Digest(m)
	}
	m1, d1 := manifest("one")
	m2, _ := manifest("two")
	put(formattest.Call{Method: "PUT", Path: "/v2/ctr/app/manifests/v1", Header: ct("application/vnd.oci.image.manifest.v1+json"), Body: m1, Want: 201})
	put(formattest.Call{Method: "PUT", Path: "/v2/ctr/app/manifests/v1", Header: ct("application/vnd.oci.image.manifest.v1+json"), Body: m2, Want: 201})
	put(formattest.Call{Method: "DELETE", Path: "/v2/ctr/app/manifests/v1", Want: 202})
	put(formattest.Call{Method: "DELETE", Path: "/v2/ctr/app/manifests/" + d1, Want: 202})
	var out struct {
		Events []struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		} `json:"events"`
	}
	e.Do("GET", "/api/v1/events?types=artifact.uploaded,artifact.deleted", e.Admin, nil).Want(200).JSON(&out)
	var got []string
	for _, x := range out.Events {
		got = append(got, fmt.Sprintf("%s %v:%v", x.Event, x.Data["package_name"], x.Data["version"]))
	}
	want := []string{"artifact.uploaded app:v1", "artifact.uploaded app:v1", "artifact.deleted app:v1", "artifact.deleted app:" + d1}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
}

// TestEdgeDownloadEvents: downloads an edge serves, in full or from the
// answers it remembers, are events at the origin with their downloader,
// from the moment a webhook subscribes to them (even before the edge's
// next heartbeat tells it); before, they are only counted.
func TestEdgeDownloadEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a depot edge process")
	}
	e := startHooks(t, nil)
	clienttest.ThroughEdge(t, e)
	repo := e.CreateRepo("files", "generic", false)
	dave := e.CreateUser("dave", "user", "dave-Password-1")
	e.Grant(repo, dave, false, "read", "write")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("dave:dave-Password-1"))
	e.DoHeader("PUT", "/generic/files/tool/1.0/t.txt", basic, "x", nil).Want(201)
	e.Do("GET", "/generic/files/tool/1.0/t.txt", basic, nil).Want(200) // nobody wants it as an event
	clienttest.SubscribeDownloads(t, e)
	for range 3 {
		e.Do("GET", "/generic/files/tool/1.0/t.txt", basic, nil).Want(200)
	}
	var got []map[string]any
	waitFor(t, "three download events from the edge", func() bool {
		var out struct {
			Events []struct {
				Data map[string]any `json:"data"`
			} `json:"events"`
		}
		e.Do("GET", "/api/v1/events?types=artifact.downloaded", e.Admin, nil).Want(200).JSON(&out)
		got = got[:0]
		for _, x := range out.Events {
			got = append(got, x.Data)
		}
		return len(got) >= 3
	})
	for _, d := range got {
		who := fmt.Sprint(d["downloader"])
		if d["package_name"] != "tool" || d["version"] != "1.0" || d["repository_name"] != "files" ||
			who != fmt.Sprint(map[string]any{"user_id": dave, "username": "dave", "ip_address": "127.0.0.1"}) {
			t.Errorf("download event %v", d)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d download events, want 3", len(got))
	}
}

// TestWebhookSettings: WEBHOOK_CONCURRENCY bounds the attempts in
// flight, WEBHOOK_QUEUE_SIZE the pending deliveries (events wait in the
// log meanwhile and are all delivered in the end).
func TestWebhookSettings(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.Concurrency = 2; c.Webhooks.QueueSize = 3 })
	rcv := clienttest.NewReceiver(t, "")
	rcv.Answer(http.StatusNoContent, 100*time.Millisecond)
	hook := createHook(e, map[string]any{"url": rcv.URL, "events": []string{"artifact.uploaded"}})
	e.CreateRepo("files", "generic", false)
	for i := range 12 {
		e.DoHeader("PUT", fmt.Sprintf("/generic/files/p/%d/f", i), e.Admin, "x", nil).Want(201)
	}
	most := 0
	waitFor(t, "twelve deliveries", func() bool {
		n := 0
		for _, d := range deliveries(e, hook) {
			if d.State == "pending" {
				n++
			}
		}
		most = max(most, n)
		return len(rcv.Got()) == 12
	})
	if got := rcv.MostAtOnce(); got > 2 || got < 1 {
		t.Errorf("%d deliveries in flight at once, want at most WEBHOOK_CONCURRENCY=2", got)
	}
	if most > 3 {
		t.Errorf("%d deliveries pending at once, want at most WEBHOOK_QUEUE_SIZE=3", most)
	}
	t.Logf("most in flight %d, most pending seen %d", rcv.MostAtOnce(), most)
}

// TestWebhooksDisabled: with WEBHOOKS_ENABLED=false nothing is sent and
// the test endpoint says why; the event log still records.
func TestWebhooksDisabled(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.Enabled = false })
	rcv := clienttest.NewReceiver(t, "")
	hook := createHook(e, map[string]any{"url": rcv.URL, "events": []string{"*"}})
	e.CreateRepo("files", "generic", false)
	e.Do("POST", "/api/v1/webhooks/"+hook+"/test", e.Admin, nil).WantError(409, "CONFLICT")
	var out struct {
		Events []struct{ Event string } `json:"events"`
	}
	e.Do("GET", "/api/v1/events?types=repository.created", e.Admin, nil).Want(200).JSON(&out)
	if len(out.Events) != 1 {
		t.Errorf("event log while webhooks are disabled: %+v", out.Events)
	}
	rcv.Quiet(t, 0, 300*time.Millisecond)
}

// TestEventRetention: the leader trims the event log by age
// (--event-retention) and size (--event-log-max).
func TestEventRetention(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.EventRetention = time.Hour; c.Webhooks.MaxEvents = 3 })
	e.CreateRepo("files", "generic", false)
	count := func() int {
		var out struct {
			Events []struct{ Event string } `json:"events"`
		}
		e.Do("GET", "/api/v1/events?limit=1000", e.Admin, nil).Want(200).JSON(&out)
		return len(out.Events)
	}
	for i := range 6 {
		e.DoHeader("PUT", fmt.Sprintf("/generic/files/p/%d/f", i), e.Admin, "x", nil).Want(201)
	}
	var first struct {
		Events []struct{ Cursor string } `json:"events"`
	}
	e.Do("GET", "/api/v1/events?limit=1", e.Admin, nil).Want(200).JSON(&first)
	e.Clock.Advance(time.Minute) // housekeeping runs once a minute
	waitFor(t, "the log trimmed to its size", func() bool { return count() == 3 })
	// A reader whose cursor the trim passed is told it missed events.
	var behind struct {
		Events []struct{ Cursor string } `json:"events"`
		Missed bool                      `json:"missed"`
	}
	e.Do("GET", "/api/v1/events?since="+first.Events[0].Cursor, e.Admin, nil).Want(200).JSON(&behind)
	if !behind.Missed || len(behind.Events) != 3 {
		t.Errorf("a reader behind the trim: missed %v, %d events", behind.Missed, len(behind.Events))
	}
	var current struct {
		Missed bool `json:"missed"`
	}
	e.Do("GET", "/api/v1/events?since="+behind.Events[0].Cursor, e.Admin, nil).Want(200).JSON(&current)
	if current.Missed {
		t.Error("a reader within the log is told it missed events")
	}
	e.Clock.Advance(2 * time.Hour)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	waitFor(t, "the log trimmed by age", func() bool { return count() == 0 })
}

// TestDownloadEventsWhenWanted: downloads are the firehose; they are
// recorded while an active webhook subscribes to them (or to everything),
// from the download after the subscription on, and not otherwise.
func TestDownloadEventsWhenWanted(t *testing.T) {
	e := startHooks(t, nil)
	e.CreateRepo("files", "generic", false)
	e.DoHeader("PUT", "/generic/files/p/1/f", e.Admin, "x", nil).Want(201)
	get := func() { e.Do("GET", "/generic/files/p/1/f", e.Admin, nil).Want(200) }
	count := func() int {
		var out struct {
			Events []struct{ Event string } `json:"events"`
		}
		e.Do("GET", "/api/v1/events?types=artifact.downloaded", e.Admin, nil).Want(200).JSON(&out)
		return len(out.Events)
	}
	createHook(e, map[string]any{"url": "https://uploads.example.invalid/", "events": []string{"artifact.uploaded"}})
	get()
	hook := createHook(e, map[string]any{"url": "https://downloads.example.invalid/", "events": []string{"artifact.downloaded"}})
	get()
	get()
	waitFor(t, "the two downloads after the subscription", func() bool { return count() == 2 })
	e.Do("PUT", "/api/v1/webhooks/"+hook, e.Admin, map[string]any{"active": false}).Want(200)
	get()
	time.Sleep(1500 * time.Millisecond) // a batch a second
	if n := count(); n != 2 {
		t.Errorf("%d download events, want the 2 made while a webhook subscribed", n)
	}
}

// TestTrimmedEventsCounted: events the log trims before an active webhook
// was offered them (deliveries disabled here) are counted and logged.
func TestTrimmedEventsCounted(t *testing.T) {
	e := startHooks(t, func(c *origin.Config) { c.Webhooks.Enabled = false; c.Webhooks.MaxEvents = 1 })
	createHook(e, map[string]any{"url": "https://x.example.invalid/", "events": []string{"*"}})
	for _, name := range []string{"a", "b", "c"} {
		e.CreateRepo(name, "generic", false)
	}
	e.Clock.Advance(time.Minute) // housekeeping runs once a minute
	waitFor(t, "two unseen events counted", func() bool {
		return strings.Contains(string(e.Do("GET", "/metrics", "", nil).Want(200).Body), `depot_events_dropped_total{reason="trimmed"} 2`)
	})
}
