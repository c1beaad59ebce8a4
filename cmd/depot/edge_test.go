package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// edgeProc runs `depot edge` and waits until it listens.
func edgeProc(t *testing.T, bin, origin, id, token, listen, cacheDir string, flags ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"edge", "--origin", origin, "--node-id", id, "--listen", listen, "--cache-dir", cacheDir, "--heartbeat", "300ms"}, flags...)...)
	cmd.Env = append(os.Environ(), "DEPOT_NODE_TOKEN="+token)
	out := &clienttest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &proc{cmd: cmd, out: out, url: "http://" + listen}
	waitFor(t, 30*time.Second, "the edge to listen", func() bool {
		resp, err := http.Get(p.url + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return strings.Contains(out.String(), "listening on")
	})
	return p
}

// edgeSite is an origin with one repository assigned to a registered
// edge node, and that node running: what every edge test starts from.
type edgeSite struct {
	site
	o, e     *proc
	tok      string // the admin's session, password changed
	basic    string // the admin's Basic credentials
	apiToken string // an API token of the admin (repository:write)
	repoID   string
	node     struct{ ID, Token string }
	listen   string // the edge's address
	cacheDir string
}

// startEdgeSite starts the origin (with originFlags), makes repository
// name of format, registers and assigns an edge node, and starts it.
func startEdgeSite(t *testing.T, name, format string, originFlags ...string) *edgeSite {
	t.Helper()
	es := &edgeSite{site: newSite(t), basic: "Basic " + basicAuth("admin", "changed-pw-456")}
	es.flags = originFlags
	es.env = []string{"DEPOT_SIGNING_KEK=" + strings.Repeat("5e", 32)} // signing keys can be made
	es.o = es.start(t)
	tok := login(t, es.o.url, "admin", "initial-pw-123")
	call(t, "PUT", es.o.url+"/api/v1/users/me", tok, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	es.tok = login(t, es.o.url, "admin", "changed-pw-456")
	post := func(path, body string, want int, v any) {
		t.Helper()
		if err := json.Unmarshal(call(t, "POST", es.o.url+"/api/v1"+path, es.tok, strings.NewReader(body), want), v); err != nil {
			t.Fatal(err)
		}
	}
	var repo struct{ ID string }
	post("/repositories", `{"name":"`+name+`","format":"`+format+`"}`, 201, &repo)
	var api struct{ Token string }
	post("/users/me/tokens", `{"name":"edge tests","scopes":["repository:write"]}`, 201, &api)
	post("/edge-nodes", `{"name":"near","url":"http://127.0.0.1:8081"}`, 201, &es.node)
	post("/edge-nodes/"+es.node.ID+"/repositories", `{"repository_ids":["`+repo.ID+`"]}`, 200, &struct{}{})
	es.repoID, es.apiToken = repo.ID, api.Token
	es.listen, es.cacheDir = clienttest.FreeAddr(t), t.TempDir()
	es.e = es.startEdge(t)
	waitFor(t, 20*time.Second, "the edge to catch up", func() bool { return strings.Contains(es.e.out.String(), "serving repositories") })
	return es
}

// startEdge runs the edge (again) with its address and cache.
func (es *edgeSite) startEdge(t *testing.T) *proc {
	t.Helper()
	return edgeProc(t, es.bin, es.o.url, es.node.ID, es.node.Token, es.listen, es.cacheDir)
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEdgeProcess: a registered edge node started with the real binary
// reports itself online, replicates its repository up to the origin's
// index, says it is degraded while the origin is down, and resumes from
// its index when restarted.
func TestEdgeProcess(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	o, e, tok, node, listen, cacheDir := es.o, es.e, es.tok, es.node, es.listen, es.cacheDir
	call(t, "PUT", o.url+"/generic/files/pkg/1.0/a.bin", es.basic, strings.NewReader("bytes"), 201)
	for _, want := range []string{"listening on http://" + listen, node.ID, o.url, cacheDir} {
		if !strings.Contains(e.out.String(), want) {
			t.Errorf("the startup message does not say %q:\n%s", want, e.out)
		}
	}
	var view struct {
		Status       string `json:"status"`
		AppliedIndex uint64 `json:"applied_index"`
		Lag          *uint64
	}
	waitFor(t, 20*time.Second, "the origin to list the edge online and caught up", func() bool {
		_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/edge-nodes/"+node.ID, tok, nil, 200), &view)
		return view.Status == "online" && view.AppliedIndex > 0 && view.Lag != nil && *view.Lag <= 2
	})
	// Health: status for anyone, the node's details (its origins, id and
	// repositories) for a signed-in caller only, as at the origin.
	if anon := string(call(t, "GET", e.url+"/api/v1/health", "", nil, 200)); strings.Contains(anon, node.ID) || strings.Contains(anon, o.url) || strings.Contains(anon, "node") {
		t.Errorf("the edge's health tells an anonymous caller %s", anon)
	}
	if signed := string(call(t, "GET", e.url+"/api/v1/health", tok, nil, 200)); !strings.Contains(signed, node.ID) || !strings.Contains(signed, o.url) {
		t.Errorf("the edge's health tells a signed-in caller %s", signed)
	}
	metrics := string(call(t, "GET", e.url+"/metrics", "", nil, 200))
	for _, m := range []string{"depot_edge_cache_hits_total", "depot_edge_replica_applied_index", "depot_edge_replica_lag", "depot_edge_feed_errors_total", "depot_edge_feed_changes_total", "depot_edge_served_bytes_total", "depot_edge_fetch_seconds_bucket"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("the edge's metrics lack %s", m)
		}
	}
	// The repository's blob is prefetched into the cache, verified.
	sum := sha256.Sum256([]byte("bytes"))
	hx := hex.EncodeToString(sum[:])
	waitFor(t, 20*time.Second, "the blob to be prefetched", func() bool {
		b, err := os.ReadFile(filepath.Join(cacheDir, "blobs", "sha256", hx[:2], hx))
		return err == nil && string(b) == "bytes"
	})
	var missing struct {
		MissingBlobs int64 `json:"missing_blobs"`
		CachedBytes  int64 `json:"cached_bytes"`
		Sync         *struct {
			State     string `json:"state"`
			Operation string `json:"operation"`
			Done      int64  `json:"done"`
			Total     int64  `json:"total"`
			Bytes     int64  `json:"bytes"`
		} `json:"sync"`
	}
	waitFor(t, 20*time.Second, "the edge to report its cache and its prefetch", func() bool {
		_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/edge-nodes/"+node.ID, tok, nil, 200), &missing)
		return missing.CachedBytes == 5 && missing.MissingBlobs == 0 && missing.Sync != nil && missing.Sync.Done == 1
	})
	if s := *missing.Sync; s.State != "synced" || s.Operation != "prefetch" || s.Total != 1 || s.Bytes != 5 {
		t.Errorf("the edge's sync as the origin lists it = %+v, want synced after a prefetch of 1 blob of 5 bytes", s)
	}
	// The edge counts its prefetch apart from misses; the origin exports
	// what the edge reported, the upload and its storage.
	edgeMetrics := string(call(t, "GET", e.url+"/metrics", "", nil, 200))
	for _, m := range []string{"depot_edge_cache_prefetches_total 1", "depot_edge_cache_misses_total 0", "depot_edge_prefetch_running 0"} {
		if !strings.Contains(edgeMetrics, m+"\n") {
			t.Errorf("the edge's metrics lack %q", m)
		}
	}
	originMetrics := string(call(t, "GET", o.url+"/metrics", "", nil, 200))
	edgeLabels := `{edge_id="` + node.ID + `",edge_name="near"}`
	for _, m := range []string{`depot_edge_nodes{status="online"} 1`, "depot_edge_node_cached_bytes" + edgeLabels + " 5",
		"depot_edge_node_missing_blobs" + edgeLabels + " 0", "depot_edge_node_lag_entries" + edgeLabels,
		"depot_edge_node_last_contact_timestamp_seconds" + edgeLabels, `depot_artifacts_uploaded_total{format="generic"} 1`,
		"depot_storage_free_bytes", "depot_storage_min_free_bytes", "depot_blobs_stored ", "depot_blob_repair_missing 0",
		"depot_raft_fault_tolerance 0"} {
		if !strings.Contains(originMetrics, m) {
			t.Errorf("the origin's metrics lack %q", m)
		}
	}

	// Reads are served by the edge, from its replica and cache, as the
	// origin answers them.
	basic := es.basic
	file := "/generic/files/pkg/1.0/a.bin"
	get := func(base string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base+file, nil)
		req.Header.Set("Authorization", basic)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	body := func(r *http.Response) string { defer r.Body.Close(); b, _ := io.ReadAll(r.Body); return string(b) }
	downloads := func() float64 {
		var st map[string]any
		_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/admin/stats", tok, nil, 200), &st)
		n, _ := st["downloads_24h"].(float64)
		return n
	}
	before := downloads()
	fromOrigin, fromEdge := get(o.url, nil), get(e.url, nil)
	if fromEdge.StatusCode != 200 || body(fromEdge) != "bytes" || body(fromOrigin) != "bytes" {
		t.Fatalf("GET through the edge: %d", fromEdge.StatusCode)
	}
	for _, h := range []string{"Content-Type", "ETag", "Content-Length", "Content-Disposition"} {
		if fromEdge.Header.Get(h) != fromOrigin.Header.Get(h) {
			t.Errorf("%s: edge %q, origin %q", h, fromEdge.Header.Get(h), fromOrigin.Header.Get(h))
		}
	}
	if r := get(e.url, map[string]string{"Range": "bytes=1-2"}); r.StatusCode != 206 || body(r) != "yt" || r.Header.Get("Content-Range") != "bytes 1-2/5" {
		t.Errorf("range through the edge: %d %q", r.StatusCode, r.Header.Get("Content-Range"))
	}
	etag := fromOrigin.Header.Get("ETag")
	if r := get(e.url, map[string]string{"If-None-Match": etag}); etag == "" || r.StatusCode != 304 {
		t.Errorf("conditional GET through the edge with ETag %q: %d", etag, r.StatusCode)
	}
	// The REST download, by artifact id, from the edge.
	var art struct{ ID string }
	var versions struct {
		Versions []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/packages/pkg/versions", tok, nil, 200), &versions)
	if len(versions.Versions) == 0 {
		t.Fatal("no version of pkg")
	}
	art.ID = versions.Versions[0].ArtifactID
	if got := call(t, "GET", e.url+"/api/v1/artifacts/"+art.ID+"/download", basic, nil, 200); string(got) != "bytes" {
		t.Fatalf("REST download at the edge: %q", got)
	}
	call(t, "GET", e.url+"/api/v1/artifacts/"+art.ID+"/download", "", nil, 401)
	anon, _ := http.Get(e.url + file)
	if anon.StatusCode != 401 || anon.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("anonymous read of a private repository at the edge: %d %q", anon.StatusCode, anon.Header.Get("WWW-Authenticate"))
	}
	anon.Body.Close()

	// The edge's downloads count at the origin (in heartbeat batches):
	// one from the origin itself, at least two from the edge.
	waitFor(t, 10*time.Second, "the edge's downloads to be counted", func() bool { return downloads() >= before+3 })

	// A write through the edge goes to the origin, and the edge serves it
	// at once (read your writes); the REST API is forwarded too.
	req, _ := http.NewRequest("PUT", e.url+"/generic/files/pkg/2.0/b.bin", strings.NewReader("written at the edge"))
	req.Header.Set("Authorization", basic)
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if put.StatusCode != 201 {
		t.Fatalf("a write through the edge: %d %s", put.StatusCode, body(put))
	}
	put.Body.Close()
	req, _ = http.NewRequest("GET", e.url+"/generic/files/pkg/2.0/b.bin", nil)
	req.Header.Set("Authorization", basic)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 200 || body(r) != "written at the edge" {
		t.Fatalf("reading the write back at the edge: %v %v", r, err)
	}
	call(t, "GET", e.url+"/api/v1/repositories", tok, nil, 200)

	// Passwords: the edge holds no password hashes (nor emails): it has
	// the origin check one, and remembers a yes briefly.
	var carol struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", o.url+"/api/v1/users", tok, strings.NewReader(`{"username":"carol","email":"carol@corp.example","password":"carol-pw-1234","role":"user"}`), 201), &carol)
	call(t, "POST", o.url+"/api/v1/permissions", tok, strings.NewReader(`{"repository_id":"`+es.repoID+`","user_id":"`+carol.ID+`","permissions":["read"]}`), 201)
	var carolTok struct{ Token string }
	_ = json.Unmarshal(call(t, "POST", o.url+"/api/v1/users/me/tokens", login(t, o.url, "carol", "carol-pw-1234"), strings.NewReader(`{"name":"ci","scopes":["repository:read"]}`), 201), &carolTok)
	waitFor(t, 10*time.Second, "the edge to know carol", func() bool {
		req, _ := http.NewRequest("GET", e.url+file, nil)
		req.Header.Set("Authorization", "Basic "+basicAuth("carol", carolTok.Token))
		r, err := http.DefaultClient.Do(req)
		return err == nil && body(r) == "bytes"
	})
	req, _ = http.NewRequest("GET", e.url+file, nil)
	req.Header.Set("Authorization", "Basic "+basicAuth("carol", "not-her-password"))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 401 {
		t.Fatalf("a wrong password at the edge: %v %v", r, err)
	}
	// Checked once, remembered; forgotten when the password changes.
	carolPw := func(pw string) int {
		req, _ := http.NewRequest("GET", e.url+file, nil)
		req.Header.Set("Authorization", "Basic "+basicAuth("carol", pw))
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if got := carolPw("carol-pw-1234"); got != 200 {
		t.Fatalf("carol's password at the edge: %d", got)
	}
	call(t, "PUT", o.url+"/api/v1/users/me", login(t, o.url, "carol", "carol-pw-1234"), strings.NewReader(`{"current_password":"carol-pw-1234","password":"carol-new-5678"}`), 200)
	waitFor(t, 2*time.Second, "the edge to forget carol's old password", func() bool { return carolPw("carol-pw-1234") == 401 })
	// Signing keys: the edge gets their public parts (to check
	// signatures), never their sealed private parts.
	var key struct {
		ID        string
		PublicKey string `json:"public_key"`
	}
	_ = json.Unmarshal(call(t, "POST", o.url+"/api/v1/signing/keys", tok, strings.NewReader(`{"name":"edge test","algorithm":"ecdsa-p256"}`), 201), &key)
	pemLine := strings.Split(key.PublicKey, "\n")[1]
	waitFor(t, 10*time.Second, "the key's public part to reach the edge", func() bool {
		raw, _ := os.ReadFile(filepath.Join(cacheDir, "replica.db"))
		return strings.Contains(string(raw), pemLine)
	})
	for _, f := range []string{"replica.db"} {
		raw, err := os.ReadFile(filepath.Join(cacheDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"$argon2id$", "carol@corp.example", "@example.com", `"sealed"`} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("the edge's %s holds %q", f, secret)
			}
		}
	}

	// Search: a question about a repository the edge holds is answered
	// from its replica (saying so), any other by an origin.
	search := func(path string) (status int, scope, answer string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.url+"/api/v1/search/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+es.apiToken)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode, r.Header.Get("X-Depot-Search-Scope"), body(r)
	}
	if st, scope, got := search("advanced?repository=files"); st != 200 || scope != "edge" || !strings.Contains(got, `"name":"pkg","version":"1.0"`) {
		t.Errorf("an advanced search of the edge's repository: %d %q %s", st, scope, got)
	}
	if st, scope, got := search("quick?q=a.bin"); st != 200 || scope != "" || !strings.Contains(got, `"path":"pkg/1.0/a.bin"`) {
		t.Errorf("a quick search at the edge: %d %q %s", st, scope, got)
	}

	// Origin down: the edge says it is degraded, and keeps serving.
	o.stop(t)
	waitFor(t, 10*time.Second, "the edge to report the origin unreachable", func() bool {
		resp, err := http.Get(e.url + "/api/v1/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h struct{ Reasons []string }
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return resp.StatusCode == 503 && len(h.Reasons) == 1 && h.Reasons[0] == "origin_unreachable"
	})
	if r := get(e.url, nil); r.StatusCode != 200 || body(r) != "bytes" {
		t.Fatalf("with the origin down the edge answered %d", r.StatusCode)
	}
	call(t, "GET", e.url+"/api/v1/artifacts/"+art.ID+"/download", basic, nil, 200) // offline too (a password it checked a moment ago)
	// A password it has not checked cannot be checked now: 503 saying to
	// use an API token; the API token works offline.
	req, _ = http.NewRequest("GET", e.url+file, nil)
	req.Header.Set("Authorization", "Basic "+basicAuth("carol", "carol-new-5678"))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 503 || !strings.Contains(body(r), "API token") {
		t.Fatalf("a password at the edge with the origin down: %v %v", r, err)
	}
	call(t, "GET", e.url+file, "Basic "+basicAuth("carol", carolTok.Token), nil, 200)
	// Searches are answered from the replica, saying so.
	if st, scope, got := search("quick?q=a.bin"); st != 200 || scope != "edge" || !strings.Contains(got, `"path":"pkg/1.0/a.bin"`) {
		t.Errorf("a quick search with the origin down: %d %q %s", st, scope, got)
	}
	if st, _, got := search("quick?q="); st != 400 || !strings.Contains(got, "VALIDATION_FAILED") {
		t.Errorf("a blank quick search with the origin down: %d %s", st, got)
	}
	// Writes need an origin: a clear 503 in the format's shape.
	req, _ = http.NewRequest("PUT", e.url+"/generic/files/pkg/3.0/c.bin", strings.NewReader("nowhere to go"))
	req.Header.Set("Authorization", basic)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 503 || !strings.Contains(body(r), "origin") {
		t.Fatalf("a write with the origin down: %v %v", r, err)
	}

	// A restarted edge resumes from its index.
	e.stop(t)
	e2 := es.startEdge(t)
	if strings.Contains(e2.out.String(), "replica at index 0;") || !strings.Contains(e2.out.String(), "  repositories: files\n") {
		t.Errorf("the restarted edge starts from index 0, or does not say what it serves:\n%s", e2.out)
	}
	e2.stop(t)
}
