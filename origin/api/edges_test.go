package api_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/replication/protocol"
)

type edgeNode struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	URL           string     `json:"url"`
	Region        string     `json:"region"`
	Status        string     `json:"status"`
	LastContact   *time.Time `json:"last_contact"`
	AppliedIndex  uint64     `json:"applied_index"`
	Lag           *uint64    `json:"lag"`
	CachedBytes   int64      `json:"cached_bytes"`
	MissingBlobs  int64      `json:"missing_blobs"`
	Version       string     `json:"version"`
	RepositoryIDs []string   `json:"repository_ids"`
	Repositories  []struct {
		ID, Name, Format string
	} `json:"repositories"`
	Token string `json:"token"`
}

func getEdge(e *origintest.Env, id string) edgeNode {
	e.T.Helper()
	var n edgeNode
	e.Do("GET", "/api/v1/edge-nodes/"+id, e.Admin, nil).Want(200).JSON(&n)
	return n
}

// TestEdgeNodes: administrators register edge nodes, which get a
// credential once; they assign and unassign repositories; a node reports
// itself with its credential, which works nowhere else and stops at once
// when the node is deregistered; the list shows each node's status.
func TestEdgeNodes(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	user := newUser(e, "dev", "user")
	e.Do("GET", "/api/v1/edge-nodes", "", nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes", user.token, nil).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/edge-nodes", user.token, map[string]string{"name": "x", "url": "http://x"}).WantError(403, "FORBIDDEN")

	var n edgeNode
	created := e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near-ci", "url": "http://10.0.0.5:8081/", "region": "eu-west"}).
		Want(201).JSON(&n)
	if !strings.Contains(string(created.Body), `"repository_ids":[]`) {
		t.Errorf("a node with no repository lists them as %s, want []", created.Body)
	}
	if n.ID == "" || !strings.HasPrefix(n.Token, "dpe_") || n.URL != "http://10.0.0.5:8081" || n.Region != "eu-west" ||
		n.Status != "offline" || n.LastContact != nil || n.Lag != nil || len(n.RepositoryIDs) != 0 {
		t.Fatalf("registered node = %+v", n)
	}
	token := n.Token
	if again := getEdge(e, n.ID); again.Token != "" {
		t.Fatal("the credential is shown again after registration")
	}
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "NEAR-CI", "url": "http://b"}).WantError(409, "CONFLICT")
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "b", "url": "ftp://b"}).WantError(400, "VALIDATION_FAILED").WantField("url")
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "../b", "url": "http://b"}).WantError(400, "VALIDATION_FAILED").WantField("name")

	libs := e.CreateRepo("libs", "generic", false)
	js := e.CreateRepo("js", "npm", true)
	var got edgeNode
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {libs, js, libs}}).Want(200).JSON(&got)
	want := []string{libs, js}
	slices.Sort(want)
	if !reflect.DeepEqual(got.RepositoryIDs, want) || len(got.Repositories) != 2 {
		t.Fatalf("assigned = %+v, want %v", got, want)
	}
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {"nope"}}).
		WantError(400, "VALIDATION_FAILED").WantField("repository_ids")
	e.Do("POST", "/api/v1/edge-nodes/missing/repositories", e.Admin, map[string][]string{"repository_ids": {libs}}).WantError(404, "NOT_FOUND")

	// The node's credential reports for the node, and does nothing else.
	report := map[string]any{"applied_index": 3, "cached_bytes": 4096, "missing_blobs": 2, "version": "test"}
	var hb struct {
		RepositoryIDs []string `json:"repository_ids"`
		OriginIndex   uint64   `json:"origin_index"`
	}
	r := e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).Want(200).JSON(&hb)
	if !reflect.DeepEqual(hb.RepositoryIDs, want) || hb.OriginIndex < 3 || r.Header.Get("X-Depot-Index") == "" {
		t.Fatalf("heartbeat answer = %+v (index header %q)", hb, r.Header.Get("X-Depot-Index"))
	}
	// The node's downloads: reported by ids (artifact, principal, client
	// address, time); the origin builds the events from its own store, for
	// artifacts of the node's repositories and users that exist. A forged
	// "admin downloaded payroll/salaries.xlsx" of a repository not assigned
	// to the node is not taken.
	artifact := func(repo, path, pkg string) string {
		e.Do("PUT", path, e.Admin, []byte("bytes")).Want(201)
		var vs struct {
			Versions []struct {
				ArtifactID string `json:"artifact_id"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/"+pkg+"/versions?repository_id="+repo, e.Admin, nil).Want(200).JSON(&vs)
		if len(vs.Versions) == 0 {
			t.Fatalf("no version of %s", pkg)
		}
		return vs.Versions[0].ArtifactID
	}
	payroll := e.CreateRepo("payroll", "generic", false)
	libsArt := artifact(libs, "/generic/libs/p/1.0/f.bin", "p")
	salaries := artifact(payroll, "/generic/payroll/salaries/2026/salaries.xlsx", "salaries")
	var me struct{ ID string }
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200).JSON(&me)
	now := time.Now().UTC()
	dl := func(art, user, remote string, at time.Time) map[string]any {
		return map[string]any{"artifact_id": art, "user_id": user, "remote": remote, "at": at}
	}
	send := func(ds ...map[string]any) *origintest.Response {
		return e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/events", token, map[string]any{"downloads": ds})
	}
	took := func(ds ...map[string]any) int {
		var a struct {
			Accepted int `json:"accepted"`
		}
		send(ds...).Want(200).JSON(&a)
		return a.Accepted
	}
	if got := took(dl(libsArt, me.ID, "192.0.2.7", now), dl(libsArt, "", "", now)); got != 2 {
		t.Errorf("accepted %d of 2 downloads", got)
	}
	for what, d := range map[string]map[string]any{
		"an artifact of a repository not assigned": dl(salaries, me.ID, "192.0.2.7", now),
		"a user that does not exist":               dl(libsArt, "made-up", "192.0.2.7", now),
		"an artifact that does not exist":          dl("nope", "", "", now),
	} {
		if got := took(d); got != 0 {
			t.Errorf("a download of %s was taken", what)
		}
	}
	// A heartbeat's download count is bounded by what a node could serve
	// since its last one (it was taken as sent, up to 2^40).
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, map[string]any{"applied_index": 3, "cached_bytes": 4096, "missing_blobs": 2, "version": "test", "downloads": int64(1) << 40}).Want(200)
	var stats struct {
		Downloads int64 `json:"downloads_24h"`
	}
	e.Do("GET", "/api/v1/admin/stats", e.Admin, nil).Want(200).JSON(&stats)
	if stats.Downloads > 60*app.NodeDownloadsPerSecond {
		t.Errorf("a heartbeat claiming 2^40 downloads counted %d", stats.Downloads)
	}
	send(dl(libsArt, "", "", now.Add(-48*time.Hour))).WantError(400, "VALIDATION_FAILED")
	send(dl(libsArt, "", "not an address", now)).WantError(400, "VALIDATION_FAILED")
	send(map[string]any{"user_id": me.ID, "at": now}).WantError(400, "VALIDATION_FAILED")
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/events", e.Admin, map[string]any{"downloads": []any{}}).Want(401)

	// A heartbeat soon after the last one is answered but not committed.
	if r := e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).Want(200); r.Header.Get("X-Depot-Index") != "" {
		t.Error("a heartbeat 0 s after the last was committed")
	}
	got = getEdge(e, n.ID)
	if got.Status != "online" || got.LastContact == nil || got.AppliedIndex != 3 || got.Lag == nil || *got.Lag == 0 ||
		got.CachedBytes != 4096 || got.MissingBlobs != 2 || got.Version != "test" {
		t.Fatalf("after a heartbeat = %+v", got)
	}
	e.Do("POST", "/api/v1/edge-nodes/other/heartbeat", token, report).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", e.Admin, report).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", token, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes", token, nil).WantError(401, "UNAUTHORIZED")
	var repos struct {
		Repositories []struct{ ID string } `json:"repositories"`
	}
	e.Do("GET", "/api/v1/repositories", token, nil).Want(200).JSON(&repos)
	if len(repos.Repositories) != 1 || repos.Repositories[0].ID != js {
		t.Fatalf("an edge credential lists %+v, want only the public repository", repos.Repositories)
	}

	// Status from the age of the last report.
	e.Clock.Advance(time.Minute)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	if got := getEdge(e, n.ID); got.Status != "stale" {
		t.Fatalf("a minute later: status %q, want stale", got.Status)
	}
	e.Clock.Advance(10 * time.Minute)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	if got := getEdge(e, n.ID); got.Status != "offline" {
		t.Fatalf("eleven minutes later: status %q, want offline", got.Status)
	}

	// Unassigning, and deleting an assigned repository.
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+libs, e.Admin, nil).Want(200).JSON(&got)
	if !reflect.DeepEqual(got.RepositoryIDs, []string{js}) {
		t.Fatalf("after unassigning libs: %v", got.RepositoryIDs)
	}
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+libs, e.Admin, nil).WantError(404, "NOT_FOUND")
	e.Do("DELETE", "/api/v1/repositories/"+js, e.Admin, nil).Want(204)
	if got := getEdge(e, n.ID); len(got.RepositoryIDs) != 0 {
		t.Fatalf("a deleted repository is still assigned: %v", got.RepositoryIDs)
	}

	var list struct {
		EdgeNodes []edgeNode `json:"edge_nodes"`
		Total     int        `json:"total"`
	}
	e.Do("GET", "/api/v1/edge-nodes", e.Admin, nil).Want(200).JSON(&list)
	if list.Total != 1 || list.EdgeNodes[0].Name != "near-ci" {
		t.Fatalf("list = %+v", list)
	}

	// Deregistered: the credential stops at once.
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).Want(204)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
}

// TestEdgeFeed: an edge node reads, with its credential, the changes of
// its repositories and the records it needs to authorise, from 0 and
// then by long poll; deletions reach it as such.
func TestEdgeFeed(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	mine := e.CreateRepo("mine", "generic", false)
	theirs := e.CreateRepo("theirs", "generic", false)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {mine}}).Want(200)
	a := put(e, "Bearer "+e.Admin, "mine/tool/1.0/tool.bin", "bytes")
	put(e, "Bearer "+e.Admin, "theirs/tool/1.0/tool.bin", "other bytes")

	type page struct {
		Changes []struct {
			Index   uint64 `json:"index"`
			Kind    int    `json:"kind"`
			Key     string `json:"key"`
			Repo    string `json:"repo"`
			Deleted bool   `json:"deleted"`
		} `json:"changes"`
		Next uint64 `json:"next"`
	}
	var p page
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed?since=0", n.Token, nil).Want(200).JSON(&p)
	sawArtifact, sawUser := false, false
	for _, c := range p.Changes {
		if c.Repo != "" && c.Repo != mine {
			t.Errorf("the feed carries a record of %s, not assigned: %+v", c.Repo, c)
		}
		sawArtifact = sawArtifact || c.Key == a.ID
		sawUser = sawUser || c.Kind == 1
	}
	if !sawArtifact || !sawUser || p.Next == 0 {
		t.Fatalf("feed from 0 = %+v, want the artifact and the users", p)
	}

	// A long poll answers the deletion of the node's artifact.
	done := make(chan page, 1)
	go func() {
		var q page
		e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed?since="+strconv.FormatUint(p.Next, 10)+"&wait=20", n.Token, nil).Want(200).JSON(&q)
		done <- q
	}()
	time.Sleep(100 * time.Millisecond)
	e.Do("DELETE", "/api/v1/artifacts/"+a.ID, e.Admin, nil).Want(204)
	select {
	case q := <-done:
		found := false
		for _, c := range q.Changes {
			found = found || c.Key == a.ID && c.Deleted
		}
		if !found {
			t.Fatalf("long poll = %+v, want the deletion of %s", q, a.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer the deletion")
	}

	e.Do("GET", "/api/v1/edge-nodes/other/feed", n.Token, nil).WantError(403, "FORBIDDEN")
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed", e.Admin, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed?repository_id="+theirs, n.Token, nil).WantError(400, "VALIDATION_FAILED").WantField("repository_id")
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed?wait=3600", n.Token, nil).WantError(400, "VALIDATION_FAILED").WantField("wait")
	// A node speaking a newer protocol than the origin is told to upgrade
	// the origins first; this version, or none (an older node), is read.
	r := e.DoHeader("GET", "/api/v1/edge-nodes/"+n.ID+"/feed", n.Token, nil, map[string]string{protocol.VersionHeader: "99"})
	r.WantError(400, "VALIDATION_FAILED")
	if !strings.Contains(string(r.Body), "upgrade the origins before the edges") {
		t.Errorf("a newer protocol: %s", r.Body)
	}
	e.DoHeader("GET", "/api/v1/edge-nodes/"+n.ID+"/feed", n.Token, nil, map[string]string{protocol.VersionHeader: strconv.Itoa(protocol.Version)}).Want(200)
}

// TestEdgeRateBucket: a node's requests are limited in a bucket of its
// own, not in that of its address's anonymous callers.
func TestEdgeRateBucket(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.RateLimit = 20 }})
	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	limited := false
	for i := 0; i < 100 && !limited; i++ {
		limited = e.Do("GET", "/api/v1/health", "", nil).Status == 429
	}
	if !limited {
		t.Fatal("anonymous requests were never limited")
	}
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/feed?since=0", n.Token, nil).Want(200)
}

// TestEdgeBlobs: a node fetches by digest the blobs its repositories'
// records keep, with Range; any other digest is not found.
func TestEdgeBlobs(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var n, m edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "far", "url": "http://127.0.0.1:8082"}).Want(201).JSON(&m)
	mine := e.CreateRepo("mine", "generic", false)
	e.CreateRepo("other", "generic", false)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {mine}}).Want(200)
	a := put(e, "Bearer "+e.Admin, "mine/tool/1.0/tool.bin", "the bytes of mine")
	b := put(e, "Bearer "+e.Admin, "other/tool/1.0/tool.bin", "the bytes of other")
	url := func(node, sum string) string { return "/api/v1/edge-nodes/" + node + "/blobs/sha256:" + sum }

	if r := e.Do("GET", url(n.ID, a.Checksums.SHA256), n.Token, nil).Want(200); string(r.Body) != "the bytes of mine" ||
		r.Header.Get("Docker-Content-Digest") != "sha256:"+a.Checksums.SHA256 {
		t.Fatalf("blob = %q, headers %v", r.Body, r.Header)
	}
	if r := e.DoHeader("GET", url(n.ID, a.Checksums.SHA256), n.Token, nil, map[string]string{"Range": "bytes=4-8"}).Want(206); string(r.Body) != "bytes" {
		t.Fatalf("range = %q", r.Body)
	}
	e.Do("GET", url(n.ID, b.Checksums.SHA256), n.Token, nil).WantError(404, "NOT_FOUND")                     // another repository's
	e.Do("GET", url(n.ID, strings.Repeat("0", 64)), n.Token, nil).WantError(404, "NOT_FOUND")                // nobody's
	e.Do("GET", url(m.ID, a.Checksums.SHA256), m.Token, nil).WantError(404, "NOT_FOUND")                     // not assigned to that node
	e.Do("GET", url(m.ID, a.Checksums.SHA256), n.Token, nil).WantError(403, "FORBIDDEN")                     // another node's path
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID+"/blobs/md5:x", n.Token, nil).WantError(400, "VALIDATION_FAILED") // malformed
	e.Do("GET", url(n.ID, a.Checksums.SHA256), e.Admin, nil).WantError(401, "UNAUTHORIZED")                  // not a node
}

// TestEdgeVouch: a node asks an origin about a JWT presented to it; the
// origin vouches for its own unexpired tokens whose session is active,
// with the claims, and for nothing else; only nodes may ask.
func TestEdgeVouch(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	type verdict struct {
		Valid  bool `json:"valid"`
		Claims *struct {
			Subject string `json:"sub"`
			Kind    string `json:"typ"`
			Session string `json:"sid"`
		} `json:"claims"`
	}
	ask := func(tok string) verdict {
		t.Helper()
		var v verdict
		e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/vouch", n.Token, map[string]string{"token": tok}).Want(200).JSON(&v)
		return v
	}
	session := e.Login("admin", origintest.AdminPassword)
	if v := ask(session); !v.Valid || v.Claims == nil || v.Claims.Kind != "access" || v.Claims.Subject == "" || v.Claims.Session == "" {
		t.Fatalf("verdict on a live session token: %+v", v)
	}
	// Forged, garbage, an API token: no.
	forged := session[:len(session)-4] + "AAAA"
	for _, tok := range []string{forged, "x.y.z", "", e.Token(e.Admin, []string{"repository:read"}, nil)} {
		if v := ask(tok); v.Valid || v.Claims != nil {
			t.Fatalf("vouched for %q: %+v", tok, v)
		}
	}
	// After logout: no.
	e.Do("POST", "/api/v1/auth/logout", session, nil).Want(204)
	if v := ask(session); v.Valid {
		t.Fatal("vouched for a session after its logout")
	}
	e.Do("POST", "/api/v1/edge-nodes/other/vouch", n.Token, map[string]string{"token": e.Admin}).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/vouch", e.Admin, map[string]string{"token": e.Admin}).WantError(401, "UNAUTHORIZED")
}
