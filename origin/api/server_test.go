package api_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	m := e.Do("GET", "/api/v1/health", "", nil).Want(200).Map()
	if len(m) != 1 || m["status"] != "ok" {
		t.Fatalf("anonymous health %v, want exactly {status: ok}", m)
	}
	m = e.Do("GET", "/api/v1/health", e.Admin, nil).Want(200).Map()
	if m["status"] != "ok" || m["node_id"] == nil || m["node_id"] == "" || m["raft_state"] != "Leader" {
		t.Fatalf("admin health %v, want status, node_id and raft_state Leader", m)
	}
	m = e.Do("GET", "/api/v1/health", basic("admin", origintest.AdminPassword), nil).Want(200).Map()
	if m["node_id"] == nil {
		t.Fatalf("health with Basic credentials lacks node_id: %v", m)
	}
	e.Do("GET", "/api/v1/health", basic("admin", "wrong-password"), nil).WantError(401, "UNAUTHORIZED")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	e.Do("GET", "/api/v1/health", "", nil).Want(200)
	r := e.Do("GET", "/metrics", "", nil).Want(200)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics Content-Type %q", r.Header.Get("Content-Type"))
	}
	body := string(r.Body)
	if !strings.Contains(body, "# TYPE depot_http_requests_total counter") || !strings.Contains(body, `depot_http_requests_total{area="api"`) {
		t.Fatalf("metrics lack depot_http_requests_total for the api:\n%s", body)
	}
	// The metadata log: a lone origin leads, has applied the commands
	// that made its administrator, timed by type, and saw a leader come.
	for _, want := range []string{"depot_raft_leader 1", `depot_raft_apply_duration_seconds_count{command="UserCreate"} 1`,
		"depot_raft_leader_changes_total", "# TYPE depot_raft_snapshot_duration_seconds histogram"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, gauge := range []string{"depot_raft_applied_index", "depot_raft_commit_index", "depot_raft_term"} {
		if !regexp.MustCompile(`(?m)^` + gauge + ` [1-9]`).MatchString(body) {
			t.Errorf("metrics: %s is not above 0", gauge)
		}
	}
	// Metrics live outside the API prefix.
	e.Do("GET", "/api/v1/metrics", "", nil).WantError(404, "NOT_FOUND")
}

func TestRouting(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})

	t.Run("unknown API path", func(t *testing.T) {
		e := e.For(t)
		for _, p := range []string{"/api/v1/nope", "/api/v1/", "/api/v1/repositories/x/y/z", "/api/v2/repositories"} {
			r := e.Do("GET", p, e.Admin, nil).WantError(404, "NOT_FOUND")
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%s: Content-Type %q", p, r.Header.Get("Content-Type"))
			}
		}
		e.Do("GET", "/api/v1/nope", "", nil).WantError(404, "NOT_FOUND")
	})

	t.Run("malformed JSON", func(t *testing.T) {
		e := e.For(t)
		for _, body := range []string{`{"name":`, `not json`, `{"name":"a"} {"name":"b"}`, ``} {
			e.Do("POST", "/api/v1/repositories", e.Admin, body).WantError(400, "BAD_REQUEST")
		}
		e.Do("POST", "/api/v1/repositories", e.Admin, `{"name":"a","format":7}`).WantError(400, "VALIDATION_FAILED").WantField("format")
		for _, body := range []string{`["a"]`, `"a"`, `7`} {
			r := e.Do("POST", "/api/v1/repositories", e.Admin, body).WantError(400, "BAD_REQUEST")
			if strings.Contains(string(r.Body), "struct") {
				t.Fatalf("error for %s shows a Go type: %s", body, r.Body)
			}
		}
	})

	t.Run("body over 1 MiB", func(t *testing.T) {
		e := e.For(t)
		big := `{"name":"big","format":"generic","description":"` + strings.Repeat("x", 1<<20) + `"}`
		e.Do("POST", "/api/v1/repositories", e.Admin, big).WantError(413, "PAYLOAD_TOO_LARGE")
		e.Do("POST", "/api/v1/auth/login", "", `{"username":"`+strings.Repeat("x", 1<<20)+`"}`).WantError(413, "PAYLOAD_TOO_LARGE")
		if l := listRepos(e, e.Admin, ""); *l.Total != 0 {
			t.Fatalf("the oversized request created a repository")
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	// No login at start: the admin keeps the initial password, so every
	// request below is counted from zero.
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true, Config: func(c *origin.Config) {
		c.RateLimit = 5
		c.RateWindow = 60 * time.Second
	}})
	start := time.Now()
	for i := 1; i <= 5; i++ {
		r := e.Do("GET", "/api/v1/health", "", nil).Want(200)
		h := r.Header
		if h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != strconv.Itoa(5-i) {
			t.Fatalf("request %d: X-RateLimit-Limit %q Remaining %q, want 5 and %d", i, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), 5-i)
		}
		reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || reset <= start.Unix() || reset > start.Add(61*time.Second).Unix() {
			t.Fatalf("request %d: X-RateLimit-Reset %q is not epoch seconds within the window", i, h.Get("X-RateLimit-Reset"))
		}
	}
	r := e.Do("GET", "/api/v1/health", "", nil).WantError(429, "RATE_LIMITED")
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q, want 1..60 seconds", r.Header.Get("Retry-After"))
	}
	if r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429 with X-RateLimit-Remaining %q", r.Header.Get("X-RateLimit-Remaining"))
	}
	// Every API route is limited, login included.
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": origintest.InitialAdminPassword}).WantError(429, "RATE_LIMITED")
	// A signed-in caller has a bucket of its own, not its address's (behind
	// a proxy everyone would share one), and is limited in it.
	admin := basic("admin", origintest.InitialAdminPassword)
	for i := 1; i <= 5; i++ {
		if r := e.Do("GET", "/api/v1/users/me", admin, nil).Want(200); r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(5-i) {
			t.Fatalf("signed-in request %d: remaining %q", i, r.Header.Get("X-RateLimit-Remaining"))
		}
	}
	e.Do("GET", "/api/v1/users/me", admin, nil).WantError(429, "RATE_LIMITED")
	e.Do("GET", "/api/v1/health", "", nil).WantError(429, "RATE_LIMITED") // the address's bucket is still spent
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.RateLimitLogin = 3 }})
	newUser(e, "victim", "user") // one login of victim
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "victim", "password": "wrong-password"}).WantError(401, "UNAUTHORIZED")
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "victim", "password": "wrong-password"}).WantError(401, "UNAUTHORIZED")
	// The fourth attempt is refused, even with the right password.
	r := e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "victim", "password": userPW}).WantError(429, "RATE_LIMITED")
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if strings.Contains(string(r.Body), "access_token") {
		t.Fatalf("rate-limited login issued a token: %s", r.Body)
	}
	// The limit is per username; other requests are not login attempts.
	login(e, "admin", origintest.AdminPassword)
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200)
}

func TestDemoMode(t *testing.T) {
	t.Parallel()
	// Seed an installation, then serve the same data directory in demo mode.
	dir := t.TempDir()
	seed := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.DataDir = dir }})
	repoID := seed.CreateRepo("demo", "generic", true)
	a := put(seed, seed.Admin, "demo/p/1.0/f.txt", "demo bytes")
	var node struct{ ID, Token string }
	seed.Do("POST", "/api/v1/edge-nodes", seed.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:1"}).Want(201).JSON(&node)
	seed.Server.Close()
	seed.Origin.Close()

	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true, Config: func(c *origin.Config) {
		c.DataDir = dir
		c.DemoMode = true
	}})
	s := login(e, "admin", origintest.AdminPassword)
	tok := s.AccessToken

	t.Run("reads work", func(t *testing.T) {
		e := e.For(t)
		e.Do("GET", "/api/v1/repositories", tok, nil).Want(200)
		e.Do("GET", "/api/v1/repositories/"+repoID, tok, nil).Want(200)
		e.Do("GET", "/api/v1/artifacts/"+a.ID, "", nil).Want(200)
		e.Do("GET", "/api/v1/users", tok, nil).Want(200)
		e.Do("GET", "/api/v1/health", "", nil).Want(200)
		if r := e.Do("GET", "/generic/demo/p/1.0/f.txt", "", nil).Want(200); string(r.Body) != "demo bytes" {
			t.Fatalf("demo download %q", r.Body)
		}
	})

	t.Run("writes are refused", func(t *testing.T) {
		e := e.For(t)
		for _, w := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/api/v1/repositories", map[string]any{"name": "x", "format": "generic"}},
			{"PUT", "/api/v1/repositories/" + repoID, map[string]any{"description": "x"}},
			{"DELETE", "/api/v1/repositories/" + repoID, nil},
			{"DELETE", "/api/v1/artifacts/" + a.ID, nil},
			{"POST", "/api/v1/users", map[string]any{"username": "x", "email": "x@example.com", "password": userPW}},
			{"PUT", "/api/v1/users/me", map[string]any{"email": "x@example.com"}},
			{"POST", "/api/v1/users/me/tokens", map[string]any{"name": "x", "scopes": []string{"admin"}}},
			{"POST", "/api/v1/groups", map[string]any{"name": "x"}},
			{"POST", "/api/v1/permissions", map[string]any{}},
			{"PATCH", "/api/v1/repositories/" + repoID, nil},
			{"PUT", "/generic/demo/p/1.0/g.txt", "x"},
			{"DELETE", "/generic/demo/p/1.0/f.txt", nil},
		} {
			e.Do(w.method, w.path, tok, w.body).WantError(403, "DEMO_MODE")
		}
		e.Do("POST", "/api/v1/repositories", "", map[string]any{"name": "x", "format": "generic"}).WantError(403, "DEMO_MODE")
		var l repoList
		e.Do("GET", "/api/v1/repositories", tok, nil).Want(200).JSON(&l)
		if *l.Total != 1 || l.Repositories[0].Description != "" || l.Repositories[0].ArtifactCount != 1 {
			t.Fatalf("a demo write changed something: %+v", l.Repositories)
		}
	})

	t.Run("edge nodes report", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/edge-nodes/"+node.ID+"/heartbeat", "Bearer "+node.Token,
			map[string]any{"applied_index": 1, "version": "test"}).Want(200)
	})

	t.Run("sessions work", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken}).Want(200)
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": "wrong-password"}).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/auth/logout", tok, nil).Want(204)
		e.Do("GET", "/api/v1/users/me", tok, nil).WantError(401, "UNAUTHORIZED")
	})
}

// TestDemoModeFreshInstall: a new demo instance must let its admin through
// the forced initial password change (and nothing else), or it is unusable.
func TestDemoModeFreshInstall(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true, Config: func(c *origin.Config) { c.DemoMode = true }})
	s := login(e, "admin", origintest.InitialAdminPassword)
	if !s.PasswordChangeRequired {
		t.Fatal("a fresh install's admin does not have to change the password")
	}
	tok := s.AccessToken
	// The pending change lets a password through, not other changes with it.
	e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"email": "x@example.com",
		"current_password": origintest.InitialAdminPassword, "password": origintest.AdminPassword}).WantError(403, "DEMO_MODE")
	e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"email": "x@example.com"}).WantError(403, "DEMO_MODE")

	e.Do("PUT", "/api/v1/users/me", tok, map[string]string{
		"current_password": origintest.InitialAdminPassword, "password": origintest.AdminPassword}).Want(200)
	tok = login(e, "admin", origintest.AdminPassword).AccessToken
	e.Do("GET", "/api/v1/repositories", tok, nil).Want(200)
	e.Do("POST", "/api/v1/repositories", tok, map[string]any{"name": "x", "format": "generic"}).WantError(403, "DEMO_MODE")
	e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"email": "x@example.com"}).WantError(403, "DEMO_MODE")
	e.Do("PUT", "/api/v1/users/me", tok, map[string]string{
		"current_password": origintest.AdminPassword, "password": "another-Password-2"}).WantError(403, "DEMO_MODE")
	if me := e.Do("GET", "/api/v1/users/me", tok, nil).Want(200).Map(); me["email"] != "admin@localhost" {
		t.Fatalf("a refused demo write changed the user: %v", me)
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit", "audit.log")
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.AuditEnabled = true
		c.AuditPath = path
	}})
	u := newUser(e, "audited", "user")
	tok := e.Token(u.token, []string{"repository:read"}, nil)
	repoID := e.CreateRepo("owned-by-admin", "generic", false)
	start := countLines(t, path)

	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "audited", "password": userPW}).Want(200)
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "audited", "password": "Wrong-Password-9"}).WantError(401, "UNAUTHORIZED")
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "audited-repo", "format": "generic"}).Want(201)
	e.Do("POST", "/api/v1/repositories", u.token, map[string]any{"name": "denied-repo", "format": "viewer-cannot"}).Want(400)
	e.Do("DELETE", "/api/v1/repositories/"+repoID, u.token, nil).WantError(403, "FORBIDDEN")
	e.Do("PUT", "/generic/owned-by-admin/p/1/f.txt", basic("admin", origintest.AdminPassword), "x").Want(201)
	e.Do("PUT", "/generic/owned-by-admin/p/1/g.txt", basic("audited", "Wrong-Password-9"), "x").WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/generic/owned-by-admin/p/1/f.txt", e.Admin, nil).Want(200) // nor are downloads
	e.Do("GET", "/api/v1/repositories", e.Admin, nil).Want(200)              // reads are not audited

	lines := readLines(t, path)[start:]
	if len(lines) != 8 {
		t.Fatalf("audit lines for two logins, a failed Basic check and five writes: %d\n%s", len(lines), strings.Join(lines, "\n"))
	}
	type event struct {
		Time    *string `json:"time"`
		Actor   *string `json:"actor"`
		Action  *string `json:"action"`
		Remote  *string `json:"remote"`
		Outcome *string `json:"outcome"`
		Node    string  `json:"node"`
	}
	want := []struct{ actor, action, outcome string }{
		{"audited", "auth.login", "success"},
		{"audited", "auth.login", "failure"},
		{"admin", "POST /api/v1/repositories", "success"},
		{"audited", "POST /api/v1/repositories", "failure"},
		{"audited", "DELETE /api/v1/repositories/{id}", "denied"},
		{"admin", "PUT /generic/owned-by-admin/p/1/f.txt", "success"},
		{"audited", "auth.basic", "failure"}, // every failed check, whatever the path and scheme
		{"anonymous", "PUT /generic/owned-by-admin/p/1/g.txt", "denied"},
	}
	for i, line := range lines {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %d is not JSON: %s", i, line)
		}
		if ev.Time == nil || ev.Actor == nil || ev.Action == nil || ev.Remote == nil || ev.Outcome == nil || !strings.HasPrefix(ev.Node, "origin-") {
			t.Fatalf("audit line %d lacks time, actor, action, remote, outcome or the node that wrote it: %s", i, line)
		}
		if _, err := time.Parse(time.RFC3339Nano, *ev.Time); err != nil || *ev.Remote == "" {
			t.Fatalf("audit line %d: bad time or remote: %s", i, line)
		}
		if *ev.Actor != want[i].actor || *ev.Action != want[i].action || *ev.Outcome != want[i].outcome {
			t.Fatalf("audit line %d: %s; want actor %s action %s outcome %s", i, line, want[i].actor, want[i].action, want[i].outcome)
		}
	}
	// No secret is ever written, in any line of the log.
	all := strings.Join(readLines(t, path), "\n")
	for _, secret := range []string{userPW, "Wrong-Password-9", origintest.AdminPassword, origintest.InitialAdminPassword, u.token, e.Admin, tok} {
		if strings.Contains(all, secret) {
			t.Fatalf("the audit log contains a secret %q", secret[:6]+"...")
		}
	}
	if strings.Contains(all, "dpt_") || strings.Contains(all, "eyJ") {
		t.Fatalf("the audit log contains a token:\n%s", all)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func countLines(t *testing.T, path string) int { return len(readLines(t, path)) }

func TestMethodNotAllowed(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	r := e.Do("PATCH", "/api/v1/repositories", e.Admin, "{}").WantError(405, "METHOD_NOT_ALLOWED")
	if allow := r.Header.Get("Allow"); allow != "GET, POST" {
		t.Fatalf("Allow %q, want GET, POST", allow)
	}
	e.Do("GET", "/api/v1/nothing-here", e.Admin, nil).WantError(404, "NOT_FOUND")
}
