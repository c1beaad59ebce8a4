// Package clienttest is the harness for tests that drive a real origin
// with the real package-manager clients (crane, skopeo, regctl, npm, pip,
// twine, mvn...). Each format's client tests live in a subpackage. A test
// skips when its client is missing, unless DEPOT_REQUIRE_CLIENTS is set
// (CI sets it): then a missing client fails the test.
package clienttest

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// RequireClients returns the paths of the named programs. A missing one
// skips the test, or fails it when DEPOT_REQUIRE_CLIENTS is set.
func RequireClients(t *testing.T, names ...string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
				t.Fatalf("client %s is required (DEPOT_REQUIRE_CLIENTS is set) but not on PATH", n)
			}
			t.Skipf("client %s not installed", n)
		}
		paths[n] = p
	}
	return paths
}

// Cmd describes one client invocation.
type Cmd struct {
	Dir  string
	Env  []string // added to a minimal environment
	Name string
	Args []string
}

// Run executes a client and returns its combined output; failure (or a
// run past two minutes) fails the test with the output.
func Run(t *testing.T, c Cmd) string {
	t.Helper()
	out, err := TryRun(c)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", c.Name, strings.Join(c.Args, " "), err, out)
	}
	return out
}

// TryRun is run without failing: for steps that are expected to fail.
func TryRun(c Cmd) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	x := exec.CommandContext(ctx, c.Name, c.Args...)
	x.Dir = c.Dir
	x.Env = append(baseEnv(), c.Env...)
	out, err := x.CombinedOutput()
	return string(out), err
}

// baseEnv keeps PATH and the toolchain's variables, nothing of the user's
// client configuration (each test gives its own HOME).
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "LANG", "TMPDIR", "JAVA_HOME", "PYENV_ROOT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Home makes an isolated HOME for a client.
func Home(t *testing.T) string {
	t.Helper()
	h := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// WriteFile writes a file, creating directories.
func WriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// User is a signed-up user with an API token.
type User struct {
	Name, Password, ID, Token string
}

// NewUser creates a user with role "user" and an API token with the
// given scopes (all repository rights when none are given).
func NewUser(e *origintest.Env, name string, scopes ...string) User {
	e.T.Helper()
	if len(scopes) == 0 {
		scopes = []string{"repository:read", "repository:write", "repository:delete"}
	}
	u := User{Name: name, Password: name + "-password-1"}
	u.ID = e.CreateUser(name, "user", u.Password)
	u.Token = e.Token(e.Login(name, u.Password), scopes, nil)
	return u
}

// HostPort is the origin's host:port.
func HostPort(e *origintest.Env) string { return strings.TrimPrefix(e.URL, "http://") }

// Basic is the user's HTTP Basic Authorization header value with the API
// token as the password.
func (u User) Basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Name+":"+u.Token))
}

// Start runs an origin with the test defaults: what most client tests
// start from (clienttest.Targets(t, clienttest.Start, ...)).
func Start(t *testing.T) *origintest.Env {
	t.Helper()
	return origintest.Start(t, origintest.Options{})
}
