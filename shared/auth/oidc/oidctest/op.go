// Package oidctest runs a real OpenID provider (the oidc-provider package
// on Node) for tests, on loopback, and drives its login form as a browser
// would, with an HTTP client that keeps cookies.
package oidctest

import (
	"bufio"
	"github.com/depot-registry/depot/shared/syncbuf"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The client Depot is registered as.
const (
	ClientID     = "depot"
	ClientSecret = "depot-test-secret"
)

// dir is the provider's directory (its package.json, lock and script).
func dir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	d := filepath.Join(filepath.Dir(file), "testdata", "oidc-op")
	if _, err := os.Stat(filepath.Join(d, "node_modules", "oidc-provider")); err != nil {
		missing(t, "the OpenID provider's packages are not installed: npm ci --prefix "+d)
	}
	return d
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
		t.Fatal(why + " (DEPOT_REQUIRE_CLIENTS is set)")
	}
	t.Skip(why)
}

// Start runs the provider with redirectURIs registered for the client
// and returns its issuer URL; it stops when the test ends.
func Start(t *testing.T, redirectURIs ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	cmd := exec.Command(node, "provider.mjs")
	cmd.Dir = dir(t)
	cmd.Env = append(os.Environ(), "PORT=0", "CLIENT_ID="+ClientID, "CLIENT_SECRET="+ClientSecret,
		"REDIRECT_URIS="+strings.Join(redirectURIs, ","))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuf.Buffer{} // written by the process's copier while a failure reads it
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if issuer, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- issuer
			}
		}
		close(ready)
	}()
	select {
	case issuer, ok := <-ready:
		if !ok {
			t.Fatalf("the OpenID provider ended before it listened:\n%s", stderr.String())
		}
		return issuer
	case <-time.After(startTimeout):
		t.Fatalf("the OpenID provider did not start in %v:\n%s", startTimeout, stderr.String())
	}
	return ""
}

// startTimeout bounds the provider's start: well under a second alone,
// much more on a machine busy with a whole test run.
const startTimeout = time.Minute

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"[^>]*method="post"`)

// LogIn answers the provider's login form that resp (a page the flow
// landed on) shows, as account login, and returns where the flow ends
// (the client follows the redirects).
func LogIn(t *testing.T, c *http.Client, resp *http.Response, login string) *http.Response {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := formAction.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no login form at %s (status %d):\n%s", resp.Request.URL, resp.StatusCode, body)
	}
	action, err := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.PostForm(action.String(), url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}})
	if err != nil {
		t.Fatalf("posting the login form: %v", err)
	}
	return next
}
