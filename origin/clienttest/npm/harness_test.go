package npm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// client is one npm user: an isolated HOME and cache, with a .npmrc that
// pins the registry to one repository of the test origin.
type client struct {
	t        *testing.T
	e        *origintest.Env
	home     string
	cache    string
	registry string // http://127.0.0.1:PORT/npm/<repo>/
	npmrc    string
}

// newClient configures npm for repo with authLine (the part after
// "//host/npm/<repo>/:", e.g. "_authToken=..."; "" for anonymous).
func newClient(t *testing.T, e *origintest.Env, repo, authLine string) *client {
	t.Helper()
	clienttest.RequireClients(t, "npm", "node")
	c := &client{t: t, e: e, home: clienttest.Home(t), cache: filepath.Join(t.TempDir(), "npmcache"),
		registry: e.URL + "/npm/" + repo + "/"}
	c.npmrc = "registry=" + c.registry + "\n"
	if authLine != "" {
		c.npmrc += "//" + clienttest.HostPort(e) + "/npm/" + repo + "/:" + authLine + "\n"
	}
	// The user config pins every run, wherever it starts; projects get a
	// copy too, as users write it.
	clienttest.WriteFile(t, filepath.Join(c.home, ".npmrc"), c.npmrc)
	return c
}

func tokenAuth(u clienttest.User) string { return "_authToken=" + u.Token }

func basicAuth(u clienttest.User) string {
	return "_auth=" + base64.StdEncoding.EncodeToString([]byte(u.Name+":"+u.Password))
}

func (c *client) cmd(dir string, args ...string) clienttest.Cmd {
	return clienttest.Cmd{Dir: dir, Name: "npm", Args: args, Env: []string{
		"HOME=" + c.home, "npm_config_cache=" + c.cache, "npm_config_userconfig=" + filepath.Join(c.home, ".npmrc"),
		"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false",
		"npm_config_loglevel=warn", "NO_COLOR=1",
	}}
}

// npm runs npm in dir and fails the test if it fails.
func (c *client) npm(dir string, args ...string) string {
	c.t.Helper()
	return clienttest.Run(c.t, c.cmd(dir, args...))
}

// tryNPM runs npm expecting it may fail.
func (c *client) tryNPM(dir string, args ...string) (string, error) {
	return clienttest.TryRun(c.cmd(dir, args...))
}

// project makes an empty project directory with the pinned .npmrc.
func (c *client) project() string {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "project")
	clienttest.WriteFile(c.t, filepath.Join(dir, ".npmrc"), c.npmrc)
	clienttest.WriteFile(c.t, filepath.Join(dir, "package.json"), `{"name":"consumer","version":"1.0.0","private":true}`)
	return dir
}

// pkg writes a publishable package whose index.js exports marker.
func (c *client) pkg(name, version, marker string) string {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "pkg")
	manifest := map[string]any{"name": name, "version": version, "description": "demo package " + marker,
		"main": "index.js", "license": "MIT", "keywords": []string{"depot", "demo"}}
	raw, _ := json.MarshalIndent(manifest, "", "  ")
	clienttest.WriteFile(c.t, filepath.Join(dir, "package.json"), string(raw))
	clienttest.WriteFile(c.t, filepath.Join(dir, "index.js"), fmt.Sprintf("module.exports = %q;\n", marker))
	clienttest.WriteFile(c.t, filepath.Join(dir, "README.md"), "# "+name+"\n\nreadme of "+marker+"\n")
	clienttest.WriteFile(c.t, filepath.Join(dir, ".npmrc"), c.npmrc)
	return dir
}

// publish publishes a fresh package directory.
func (c *client) publish(name, version, marker string, extra ...string) {
	c.t.Helper()
	c.npm(c.pkg(name, version, marker), append([]string{"publish"}, extra...)...)
}

// checkLock fails unless every resolved URL in the project's lockfile
// points at the test registry: nothing fell through to the public one.
func (c *client) checkLock(dir string, wantPkgs ...string) {
	c.t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		c.t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Resolved  string `json:"resolved"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		c.t.Fatal(err)
	}
	for _, p := range wantPkgs {
		if _, ok := lock.Packages["node_modules/"+p]; !ok {
			c.t.Errorf("lockfile has no node_modules/%s: %s", p, raw)
		}
	}
	for k, p := range lock.Packages {
		if k == "" {
			continue
		}
		if !strings.HasPrefix(p.Resolved, c.registry) {
			c.t.Errorf("lockfile entry %s resolved to %q, outside the test registry %s", k, p.Resolved, c.registry)
		}
		if !strings.HasPrefix(p.Integrity, "sha512-") {
			c.t.Errorf("lockfile entry %s has integrity %q", k, p.Integrity)
		}
	}
}

// readFile reads a file below dir.
func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setup starts an origin with a private npm repository "js" and a user
// alice who may read, write and delete there.
func setup(t *testing.T, e *origintest.Env) (string, clienttest.User) {
	t.Helper()
	clienttest.RequireClients(t, "npm", "node")
	repoID := e.CreateRepo("js", "npm", false)
	u := clienttest.NewUser(e, "alice")
	e.Grant(repoID, u.ID, false, "read", "write", "delete")
	return repoID, u
}
