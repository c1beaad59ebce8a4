package clienttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// requireClients returns the paths of the named programs. A missing one
// skips the test, or fails it when DEPOT_REQUIRE_CLIENTS is set.
func requireClients(t *testing.T, names ...string) map[string]string {
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

// cmd describes one client invocation.
type cmd struct {
	dir  string
	env  []string // added to a minimal environment
	name string
	args []string
}

// run executes a client and returns its combined output; failure (or a
// run past two minutes) fails the test with the output.
func run(t *testing.T, c cmd) string {
	t.Helper()
	out, err := tryRun(c)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", c.name, strings.Join(c.args, " "), err, out)
	}
	return out
}

// tryRun is run without failing: for steps that are expected to fail.
func tryRun(c cmd) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	x := exec.CommandContext(ctx, c.name, c.args...)
	x.Dir = c.dir
	x.Env = append(baseEnv(), c.env...)
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

// home makes an isolated HOME for a client.
func home(t *testing.T) string {
	t.Helper()
	h := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// writeFile writes a file, creating directories.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// user is a signed-up user with an API token.
type user struct {
	name, password, id, token string
}

// newUser creates a user with role "user" and an API token with the
// given scopes (all repository rights when none are given).
func newUser(e *origintest.Env, name string, scopes ...string) user {
	e.T.Helper()
	if len(scopes) == 0 {
		scopes = []string{"repository:read", "repository:write", "repository:delete"}
	}
	u := user{name: name, password: name + "-password-1"}
	u.id = e.CreateUser(name, "user", u.password)
	u.token = e.Token(e.Login(name, u.password), scopes, nil)
	return u
}

// hostPort is the origin's host:port.
func hostPort(e *origintest.Env) string { return strings.TrimPrefix(e.URL, "http://") }
