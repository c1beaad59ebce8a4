package npm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestPublishInstallView publishes plain and scoped packages with a
// token, reads them back with npm view, installs them into a fresh
// project, and finds every upload in the REST API.
func TestPublishInstallView(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		c.publish("demo-pkg", "1.0.0", "one")
		c.publish("demo-pkg", "1.1.0", "one-one")
		c.publish("@acme/widget", "2.0.0", "scoped", "--access", "public")

		out := c.npm(c.home, "view", "demo-pkg", "versions", "--json")
		var versions []string
		if err := json.Unmarshal([]byte(out), &versions); err != nil || strings.Join(versions, ",") != "1.0.0,1.1.0" {
			t.Fatalf("npm view versions = %q (%v)", out, err)
		}
		if out := c.npm(c.home, "view", "demo-pkg", "dist-tags.latest"); strings.TrimSpace(out) != "1.1.0" {
			t.Errorf("latest = %q, want 1.1.0", out)
		}
		if out := c.npm(c.home, "view", "demo-pkg", "description"); strings.TrimSpace(out) != "demo package one-one" {
			t.Errorf("description = %q", out)
		}
		if out := c.npm(c.home, "view", "@acme/widget", "dist.tarball"); strings.TrimSpace(out) != c.registry+"@acme/widget/-/widget-2.0.0.tgz" {
			t.Errorf("scoped tarball URL = %q", out)
		}
		// npm shows the publisher and maintainers as "name <email>": the
		// account's email, recorded when it published.
		if out := c.npm(c.home, "view", "demo-pkg"); !strings.Contains(out, "- alice <alice@example.com>") ||
			!strings.Contains(out, "by alice <alice@example.com>") {
			t.Errorf("npm view does not name alice with her email:\n%s", out)
		}
		shasum := strings.TrimSpace(c.npm(c.home, "view", "demo-pkg@1.0.0", "dist.shasum"))

		dir := c.project()
		c.npm(dir, "install", "demo-pkg@1.0.0", "@acme/widget", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/demo-pkg/index.js"); !strings.Contains(got, `"one"`) {
			t.Errorf("installed demo-pkg index.js = %q", got)
		}
		if got := readFile(t, dir, "node_modules/demo-pkg/package.json"); !strings.Contains(got, `"version": "1.0.0"`) {
			t.Errorf("installed demo-pkg package.json = %q", got)
		}
		if got := readFile(t, dir, "node_modules/@acme/widget/index.js"); !strings.Contains(got, `"scoped"`) {
			t.Errorf("installed @acme/widget index.js = %q", got)
		}
		c.checkLock(dir, "demo-pkg", "@acme/widget")
		clienttest.WantEvents(t, e, "artifact.uploaded", "npm", "demo-pkg@1.0.0", "demo-pkg@1.1.0", "@acme/widget@2.0.0")

		// The REST API shows every upload, and the repository's totals follow.
		var pkgs struct {
			Packages []struct {
				Name          string `json:"name"`
				VersionCount  int    `json:"version_count"`
				LatestVersion string `json:"latest_version"`
				Format        string `json:"format"`
			} `json:"packages"`
		}
		e.Do("GET", "/api/v1/packages?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&pkgs)
		got := map[string]int{}
		for _, p := range pkgs.Packages {
			got[p.Name] = p.VersionCount
			if p.Format != "npm" {
				t.Errorf("package %s format %q", p.Name, p.Format)
			}
		}
		if got["demo-pkg"] != 2 || got["@acme/widget"] != 1 || len(got) != 2 {
			t.Errorf("packages = %v", got)
		}
		var vs struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
				SizeBytes  int64  `json:"size_bytes"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/demo-pkg/versions", e.Admin, nil).Want(200).JSON(&vs)
		if len(vs.Versions) != 2 {
			t.Fatalf("versions = %+v", vs.Versions)
		}
		var total int64
		for _, v := range vs.Versions {
			var a struct {
				PackageName string            `json:"package_name"`
				Version     string            `json:"version"`
				SizeBytes   int64             `json:"size_bytes"`
				UploadedBy  string            `json:"uploaded_by"`
				Checksums   map[string]string `json:"checksums"`
			}
			e.Do("GET", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(200).JSON(&a)
			if a.PackageName != "demo-pkg" || a.Version != v.Version || a.UploadedBy != "alice" || a.SizeBytes != v.SizeBytes || a.SizeBytes <= 0 {
				t.Errorf("artifact %s = %+v", v.ArtifactID, a)
			}
			if len(a.Checksums["md5"]) != 32 || len(a.Checksums["sha1"]) != 40 || len(a.Checksums["sha256"]) != 64 {
				t.Errorf("artifact %s checksums = %v", v.ArtifactID, a.Checksums)
			}
			if v.Version == "1.0.0" && a.Checksums["sha1"] != shasum {
				t.Errorf("sha1 %s, npm's shasum %s", a.Checksums["sha1"], shasum)
			}
			total += a.SizeBytes
		}
		e.Do("GET", "/api/v1/packages/@acme%2Fwidget/versions", e.Admin, nil).Want(200).JSON(&vs)
		if len(vs.Versions) != 1 {
			t.Fatalf("scoped versions = %+v", vs.Versions)
		}
		total += vs.Versions[0].SizeBytes
		if n, size := e.RepoCounters(repoID); n != 3 || size != total {
			t.Errorf("repository artifact_count %d size_bytes %d, want 3 and %d", n, size, total)
		}
	})
}

// TestRepublishRefused: npm cannot publish over a published version, and
// nothing changes when it tries.
func TestRepublishRefused(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		c.publish("demo-pkg", "1.0.0", "first")
		n, size := e.RepoCounters(repoID)
		out, err := c.tryNPM(c.pkg("demo-pkg", "1.0.0", "second"), "publish")
		if err == nil {
			t.Fatalf("republishing 1.0.0 succeeded:\n%s", out)
		}
		// npm checks the packument it fetched first; the registry refuses too
		// (TestHTTPErrors sends the PUT itself).
		if !strings.Contains(out, "cannot publish over the previously published version") {
			t.Errorf("npm output does not show the registry's refusal:\n%s", out)
		}
		if n2, size2 := e.RepoCounters(repoID); n2 != n || size2 != size {
			t.Errorf("repository changed: %d/%d -> %d/%d", n, size, n2, size2)
		}
		dir := c.project()
		c.npm(dir, "install", "demo-pkg", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/demo-pkg/index.js"); !strings.Contains(got, `"first"`) {
			t.Errorf("installed index.js = %q, want the first publish", got)
		}
	})
}

// TestBasicAuth uses _auth (Basic, username and password) for publish,
// install and whoami.
func TestBasicAuth(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", basicAuth(alice))
		c.publish("@acme/basic", "0.1.0", "basic")
		dir := c.project()
		c.npm(dir, "install", "@acme/basic@0.1.0", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/@acme/basic/index.js"); !strings.Contains(got, `"basic"`) {
			t.Errorf("installed index.js = %q", got)
		}
		c.checkLock(dir, "@acme/basic")
		if out := c.npm(c.home, "whoami"); strings.TrimSpace(out) != "alice" {
			t.Errorf("npm whoami = %q", out)
		}
		// Without credentials the private repository refuses npm.
		anon := newClient(t, e, "js", "")
		if out, err := anon.tryNPM(anon.home, "view", "@acme/basic"); err == nil || !strings.Contains(out, "401") {
			t.Errorf("anonymous npm view: err %v\n%s", err, out)
		}
	})
}
