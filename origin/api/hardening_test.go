package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestFailedCredentialsAreLimitedEverywhere: wrong passwords through Basic
// on a package path, on the API and at the docker token realm all count
// toward one per-address-and-username limit, and past it the password is
// not even checked (429 with Retry-After), while another address is not
// affected.
func TestFailedCredentialsAreLimitedEverywhere(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.RateLimitLogin = 5
		c.AuthFailures = 1000
	}})
	newUser(e, "target", "user")
	e.CreateRepo("files", "generic", false)
	bad := basic("target", "Wrong-Password-1")
	paths := []string{"/generic/files/p/1/f.txt", "/api/v1/users/me", "/v2/token?service=x"}
	for i := 0; i < 5; i++ {
		if r := e.Do("GET", paths[i%3], bad, nil); r.Status != 401 {
			t.Fatalf("failure %d on %s: %d", i, paths[i%3], r.Status)
		}
	}
	for _, p := range paths {
		r := e.Do("GET", p, bad, nil).Want(429)
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: 429 without Retry-After", p)
		}
	}
	// Even the right password waits out the window from this address...
	e.Do("GET", "/api/v1/users/me", basic("target", userPW), nil).Want(429)
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "target", "password": userPW}).WantError(429, "RATE_LIMITED")
	// ...but a session or token is not a password guess.
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200)
	e.Clock.Advance(61 * time.Second)
	e.Do("GET", "/api/v1/users/me", basic("target", userPW), nil).Want(200)
}

// TestFailedCredentialsPerAddress: guessing different usernames from one
// address is limited too.
func TestFailedCredentialsPerAddress(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.AuthFailures = 10 }})
	for i := 0; i < 10; i++ {
		e.Do("GET", "/api/v1/users/me", basic(fmt.Sprintf("nobody%d", i), "Wrong-Password-1"), nil).WantError(401, "UNAUTHORIZED")
	}
	e.Do("GET", "/api/v1/users/me", basic("nobody-else", "Wrong-Password-1"), nil).WantError(429, "RATE_LIMITED")
	e.Do("GET", "/generic/x/p/1/f", basic("nobody-else", "Wrong-Password-1"), nil).Want(429)
}

// TestHugeCredentialsAreRefusedCheaply: a 1 MB username is refused before
// it becomes a limiter key or an audit line.
func TestHugeCredentialsAreRefusedCheaply(t *testing.T) {
	t.Parallel()
	audit := t.TempDir() + "/audit.log"
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.AuditEnabled, c.AuditPath = true, audit
	}})
	huge := strings.Repeat("u", 1<<20)
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": huge[:1000], "password": "x-password"}).
		WantError(400, "VALIDATION_FAILED").WantField("username")
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": huge[:2000]}).
		WantError(400, "VALIDATION_FAILED").WantField("password")
	for i := 0; i < 20; i++ {
		e.Do("GET", "/generic/x/p/1/f", basic(huge[:100_000], "pw-pw-pw-pw"), nil).Want(401)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 20*2048 {
		t.Fatalf("20 failed checks wrote %d bytes of audit log", len(b))
	}
}

// TestCrossSiteWritesAreRefused: a page of another site cannot use a
// browser's cached credentials to change anything; JSON endpoints take
// JSON only; an origin allowed by the CORS setting gets through.
func TestCrossSiteWritesAreRefused(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.CORSOrigins = "https://ui.example.com" }})
	body := map[string]string{"username": "evil", "email": "evil@example.com", "password": "evil-Password-1", "role": "admin"}
	admin := basic("admin", origintest.AdminPassword)
	e.DoHeader("POST", "/api/v1/users", admin, body, map[string]string{"Origin": "https://evil.example.net"}).WantError(403, "FORBIDDEN")
	e.DoHeader("POST", "/api/v1/users", admin, body, map[string]string{"Sec-Fetch-Site": "cross-site"}).WantError(403, "FORBIDDEN")
	e.DoHeader("POST", "/api/v1/users", admin, body, map[string]string{"Origin": "null"}).WantError(403, "FORBIDDEN")
	raw, _ := json.Marshal(body)
	e.DoHeader("POST", "/api/v1/users", admin, raw, map[string]string{"Content-Type": "text/plain"}).WantError(415, "UNSUPPORTED_MEDIA_TYPE")
	e.DoHeader("POST", "/api/v1/users", admin, raw, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}).WantError(415, "UNSUPPORTED_MEDIA_TYPE")
	var users struct {
		Users []struct{ Username string } `json:"users"`
	}
	e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&users)
	for _, u := range users.Users {
		if u.Username == "evil" {
			t.Fatal("a cross-site request created a user")
		}
	}
	// Reads from anywhere, and writes from the same origin, are fine.
	e.DoHeader("GET", "/api/v1/users", admin, nil, map[string]string{"Origin": "https://evil.example.net"}).Want(200)
	host := strings.TrimPrefix(e.URL, "http://")
	e.DoHeader("POST", "/api/v1/groups", admin, map[string]string{"name": "same-origin"}, map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}).Want(201)
	// The allowed origin: preflight, then the call, with CORS headers.
	r := e.DoHeader("OPTIONS", "/api/v1/groups", "", nil, map[string]string{"Origin": "https://ui.example.com", "Access-Control-Request-Method": "POST"}).Want(204)
	if r.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.com" || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight headers %v", r.Header)
	}
	r = e.DoHeader("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "from-ui"}, map[string]string{"Origin": "https://ui.example.com", "Sec-Fetch-Site": "cross-site"}).Want(201)
	if r.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.com" {
		t.Fatalf("no CORS header for the allowed origin: %v", r.Header)
	}
	e.DoHeader("OPTIONS", "/api/v1/groups", "", nil, map[string]string{"Origin": "https://evil.example.net", "Access-Control-Request-Method": "POST"}).WantError(403, "FORBIDDEN")
	// A browser is never asked for Basic credentials by the API.
	if c := e.Do("GET", "/api/v1/users/me", "", nil).Want(401).Header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer") {
		t.Fatalf("API challenge %q", c)
	}
}

// TestNarrowTokensCannotManageTheAccount: a token scoped to a repository
// cannot change its user's email, list or revoke the user's tokens; it
// may revoke itself.
func TestNarrowTokensCannotManageTheAccount(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	u := newUser(e, "owner", "user")
	narrow := e.Token(u.token, []string{"repository:read:x"}, nil)
	other := e.Token(u.token, []string{"repository:write"}, nil)
	e.Do("PUT", "/api/v1/users/me", narrow, map[string]string{"email": "attacker@example.com"}).WantError(403, "FORBIDDEN")
	e.Do("GET", "/api/v1/users/me/tokens", narrow, nil).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/users/me/tokens", narrow, map[string]any{"name": "more", "scopes": []string{"repository:admin"}}).WantError(403, "FORBIDDEN")
	var toks struct {
		Tokens []struct {
			ID     string
			Scopes []string
		} `json:"tokens"`
	}
	e.Do("GET", "/api/v1/users/me/tokens", u.token, nil).Want(200).JSON(&toks)
	self := ""
	for _, tk := range toks.Tokens {
		if len(tk.Scopes) == 1 && tk.Scopes[0] == "repository:read:x" {
			self = tk.ID
			continue
		}
		e.Do("DELETE", "/api/v1/users/me/tokens/"+tk.ID, narrow, nil).WantError(403, "FORBIDDEN")
	}
	e.Do("GET", "/api/v1/users/me", other, nil).Want(200) // reading the profile is fine
	// It may give itself up (a tool's logout), and is gone.
	if self == "" {
		t.Fatalf("the narrow token is not listed: %+v", toks.Tokens)
	}
	e.Do("DELETE", "/api/v1/users/me/tokens/"+self, narrow, nil).Want(204)
	e.Do("GET", "/api/v1/users/me", narrow, nil).WantError(401, "UNAUTHORIZED")
	if me := e.Do("GET", "/api/v1/users/me", u.token, nil).Want(200).Map(); me["email"] != "owner@example.com" {
		t.Fatalf("email changed: %v", me)
	}
	// A session manages the account.
	e.Do("PUT", "/api/v1/users/me", u.token, map[string]string{"email": "new@example.com"}).Want(200)
}

// TestForwardedHeadersNeedATrustedProxy: X-Forwarded-For does not pick a
// client's rate-limit bucket, and X-Forwarded-Host does not steer absolute
// URLs, unless the peer is a configured proxy.
func TestForwardedHeadersNeedATrustedProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{false, true} {
		e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
			c.RateLimit = 5
			if trusted {
				c.TrustedProxies = "127.0.0.0/8, ::1"
			}
		}})
		limited := 0
		for i := 0; i < 10; i++ {
			r := e.DoHeader("GET", "/api/v1/health", "", nil, map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)})
			if r.Status == 429 {
				limited++
			}
		}
		if (limited > 0) == trusted {
			t.Fatalf("trusted=%v: %d of 10 requests from spoofed addresses were limited", trusted, limited)
		}
		// The docker token realm in a challenge is an absolute URL.
		r := e.DoHeader("GET", "/v2/", "", nil, map[string]string{"X-Forwarded-Host": "evil.example.net", "X-Forwarded-Proto": "https"}).Want(401)
		c := r.Header.Get("WWW-Authenticate")
		if got := strings.Contains(c, "https://evil.example.net/v2/token"); got != trusted {
			t.Fatalf("trusted=%v: challenge %q", trusted, c)
		}
		if !strings.Contains(r.Header.Get("Vary"), "X-Forwarded-Host") {
			t.Fatalf("no Vary on an answer built from the request's host: %v", r.Header)
		}
	}
}

// TestSlowBodiesAreCut: an upload dribbling below the minimum rate is cut
// off (408) instead of holding its connection forever, and nothing is
// stored; a JSON body must arrive within the body timeout.
func TestSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.MinUploadRate, c.UploadRateWindow = 1000, time.Second
		c.BodyTimeout = 500 * time.Millisecond
	}})
	e.CreateRepo("files", "generic", false)
	for _, tc := range []struct{ method, path, ctype string }{
		{"PUT", "/generic/files/p/1/slow.bin", "application/octet-stream"},
		{"POST", "/api/v1/groups", "application/json"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// One byte of a 100 kB body, then nothing: the server must give up
		// on its own.
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: 100000\r\n\r\n{",
			tc.method, tc.path, e.Admin, tc.ctype)
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a stalled body: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("%s: a stalled body answered %d, want 408", tc.path, resp.StatusCode)
		}
	}
	e.Do("GET", "/generic/files/p/1/slow.bin", e.Admin, nil).Want(404) // nothing half-written
}

// TestEdgeCredentialBuysNoGuesses: whoever holds an edge node's
// credential is believed about its client's address, but the failures of
// the sign-ins it forwards count against the node too: twenty wrong
// passwords for one user "from" twenty made-up addresses were all tried
// (the limit is 5); now the sixth is refused, at the login and on Basic,
// and the audit log says which node the address came from. Its word that
// the client used HTTPS is not taken over plain HTTP.
func TestEdgeCredentialBuysNoGuesses(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.RateLimitLogin = 5
		c.AuthFailures = 1000
	}})
	newUser(e, "target", "user")
	var node struct{ ID, Token string }
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:1"}).Want(201).JSON(&node)
	from := func(i int) map[string]string {
		return map[string]string{"X-Depot-Edge": node.Token, "X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i)}
	}
	tried := 0
	for i := range 20 {
		r := e.DoHeader("POST", "/api/v1/auth/login", "", map[string]string{"username": "target", "password": "Wrong-Password-1"}, from(i))
		if r.Status == 401 {
			tried++
		} else if r.Status != 429 {
			t.Fatalf("attempt %d: %d %s", i, r.Status, r.Body)
		}
	}
	if tried > 5 {
		t.Fatalf("%d of 20 wrong passwords from made-up addresses through an edge credential were tried (limit 5)", tried)
	}
	if r := e.DoHeader("GET", "/api/v1/users/me", basic("target", "Wrong-Password-2"), nil, from(99)); r.Status != 429 {
		t.Fatalf("Basic through the node after its failures: %d", r.Status)
	}
	// Another address that is not the node's word is not affected.
	e.Do("GET", "/api/v1/users/me", basic("target", userPW), nil).Want(200)
}

// TestArchiveBombs: uploads made to unpack far more than their size (the
// review's: a 10 KiB gem whose metadata.gz is 4 MiB of YAML, charts with
// many or huge Chart.yaml, a 1 KiB conda package of 1 GiB of zeros, zip
// and gzip members of 256 MiB of zeros) are refused with 400, allocating
// less than 32 MiB each (a gem took the origin from 77 to 612 MiB; four
// at once 2.77 GiB), and nothing is stored. The time each took is logged
// (bench/bombs.sh measures it on the binary).
func TestArchiveBombs(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	made := map[string]bool{}
	for _, b := range formattest.Bombs(t) {
		if !made[b.Repo[0]] {
			e.CreateRepo(b.Repo[0], b.Repo[1], false)
			made[b.Repo[0]] = true
		}
		hdr := map[string]string{"Content-Type": "application/octet-stream"}
		maps.Copy(hdr, b.Header)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := e.DoHeader(b.Method, b.Path, e.Admin, b.Body, hdr)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		grew := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s (%d bytes): %d in %v, %d KiB allocated", b.Name, len(b.Body), r.Status, took, grew>>10)
		if r.Status != 400 {
			t.Errorf("%s: %d %s", b.Name, r.Status, r.Body)
		}
		if grew > 32<<20 {
			t.Errorf("%s: the origin allocated %d MiB answering it", b.Name, grew>>20)
		}
	}
	for name := range made {
		var list struct {
			Repositories []struct {
				Name          string `json:"name"`
				ArtifactCount int    `json:"artifact_count"`
			} `json:"repositories"`
		}
		e.Do("GET", "/api/v1/repositories?limit=100", e.Admin, nil).Want(200).JSON(&list)
		for _, r := range list.Repositories {
			if r.Name == name && r.ArtifactCount != 0 {
				t.Errorf("repository %s holds %d artifacts after the refused uploads", name, r.ArtifactCount)
			}
		}
	}
}
