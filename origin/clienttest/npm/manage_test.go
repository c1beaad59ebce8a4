package npm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestDistTagsDeprecate: dist-tag add/ls/rm, and deprecate then
// undeprecate, as npm view and npm install see them.
func TestDistTagsDeprecate(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		c.publish("demo-pkg", "1.0.0", "one")
		c.publish("demo-pkg", "2.0.0-rc.1", "two-rc", "--tag", "next")
		c.publish("@acme/tagged", "1.0.0", "scoped")

		if out := c.npm(c.home, "dist-tag", "ls", "demo-pkg"); out != "latest: 1.0.0\nnext: 2.0.0-rc.1\n" {
			t.Errorf("dist-tag ls = %q", out)
		}
		c.npm(c.home, "dist-tag", "add", "demo-pkg@1.0.0", "stable")
		c.npm(c.home, "dist-tag", "add", "@acme/tagged@1.0.0", "beta")
		if out := c.npm(c.home, "dist-tag", "ls", "@acme/tagged"); out != "beta: 1.0.0\nlatest: 1.0.0\n" {
			t.Errorf("scoped dist-tag ls = %q", out)
		}
		dir := c.project()
		c.npm(dir, "install", "demo-pkg@next", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/demo-pkg/index.js"); !strings.Contains(got, `"two-rc"`) {
			t.Errorf("demo-pkg@next installed %q", got)
		}
		c.npm(c.home, "dist-tag", "rm", "demo-pkg", "next")
		var tags map[string]string
		if err := json.Unmarshal([]byte(c.npm(c.home, "view", "demo-pkg", "dist-tags", "--json")), &tags); err != nil {
			t.Fatal(err)
		}
		if len(tags) != 2 || tags["latest"] != "1.0.0" || tags["stable"] != "1.0.0" {
			t.Errorf("dist-tags after rm = %v", tags)
		}
		// A tag that is a version is refused by the registry too (npm checks
		// ranges itself, so this goes over HTTP).
		e.Do("PUT", "/npm/js/-/package/demo-pkg/dist-tags/1.2.3", alice.Token, `"1.0.0"`).Want(400)

		c.npm(c.home, "deprecate", "demo-pkg@1.0.0", "use 2.x instead")
		if out := c.npm(c.home, "view", "demo-pkg@1.0.0", "deprecated"); strings.TrimSpace(out) != "use 2.x instead" {
			t.Errorf("npm view deprecated = %q", out)
		}
		if out := c.npm(c.home, "view", "demo-pkg@2.0.0-rc.1", "deprecated"); strings.TrimSpace(out) != "" {
			t.Errorf("2.0.0-rc.1 deprecated too: %q", out)
		}
		dir = c.project()
		out := c.npm(dir, "install", "demo-pkg@1.0.0", "--no-audit", "--no-fund")
		if !strings.Contains(out, "deprecated") || !strings.Contains(out, "use 2.x instead") {
			t.Errorf("install of a deprecated version did not warn:\n%s", out)
		}
		c.npm(c.home, "deprecate", "demo-pkg@1.0.0", "")
		if out := c.npm(c.home, "view", "demo-pkg@1.0.0", "deprecated"); strings.TrimSpace(out) != "" {
			t.Errorf("after undeprecate: %q", out)
		}
	})
}

// TestUnpublish removes one version, then a whole package, and the
// repository's totals follow.
func TestUnpublish(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		c.publish("demo-pkg", "1.0.0", "one")
		c.publish("demo-pkg", "1.1.0", "one-one")
		c.publish("@acme/gone", "1.0.0", "gone")
		c.npm(c.home, "dist-tag", "add", "demo-pkg@1.1.0", "beta")
		if n, _ := e.RepoCounters(repoID); n != 3 {
			t.Fatalf("artifact_count %d, want 3", n)
		}

		c.npm(c.home, "unpublish", "demo-pkg@1.1.0", "--force")
		var versions []string
		if err := json.Unmarshal([]byte(c.npm(c.home, "view", "demo-pkg", "versions", "--json")), &versions); err != nil {
			t.Fatal(err)
		}
		if len(versions) != 1 || versions[0] != "1.0.0" {
			t.Errorf("versions after unpublish = %v", versions)
		}
		if out := c.npm(c.home, "dist-tag", "ls", "demo-pkg"); out != "latest: 1.0.0\n" {
			t.Errorf("dist-tags after unpublish = %q", out)
		}
		e.Do("GET", "/npm/js/demo-pkg/-/demo-pkg-1.1.0.tgz", alice.Token, nil).Want(404)
		if n, _ := e.RepoCounters(repoID); n != 2 {
			t.Errorf("artifact_count %d after unpublishing a version, want 2", n)
		}

		c.npm(c.home, "unpublish", "@acme/gone", "--force")
		if out, err := c.tryNPM(c.home, "view", "@acme/gone"); err == nil || !strings.Contains(out, "404") {
			t.Errorf("npm view of an unpublished package: err %v\n%s", err, out)
		}
		c.npm(c.home, "unpublish", "demo-pkg", "--force")
		if n, size := e.RepoCounters(repoID); n != 0 || size != 0 {
			t.Errorf("artifact_count %d size_bytes %d after unpublishing everything", n, size)
		}
		// A removed package can be published afresh.
		c.publish("demo-pkg", "1.0.0", "again")
		if out := c.npm(c.home, "dist-tag", "ls", "demo-pkg"); out != "latest: 1.0.0\n" {
			t.Errorf("dist-tags after republish = %q", out)
		}
	})
}

// TestSearchWhoamiPing: npm search, whoami (token) and ping.
func TestSearchWhoamiPing(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		c.publish("demo-pkg", "1.0.0", "alpha")
		c.publish("@acme/other", "3.0.0", "beta")

		var hits []struct {
			Name        string `json:"name"`
			Version     string `json:"version"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal([]byte(c.npm(c.home, "search", "demo", "--json")), &hits); err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 {
			t.Errorf("search demo = %+v", hits)
		}
		if err := json.Unmarshal([]byte(c.npm(c.home, "search", "beta", "--json")), &hits); err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Name != "@acme/other" || hits[0].Version != "3.0.0" || hits[0].Description != "demo package beta" {
			t.Errorf("search beta = %+v", hits)
		}
		if out := c.npm(c.home, "whoami"); strings.TrimSpace(out) != "alice" {
			t.Errorf("npm whoami = %q", out)
		}
		if out := c.npm(c.home, "ping", "--loglevel", "notice"); !strings.Contains(out, "PONG") {
			t.Errorf("npm ping = %q", out)
		}
	})
}
