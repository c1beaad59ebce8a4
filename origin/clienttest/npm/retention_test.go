package npm

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRetention: a repository's retention rule, applied by POST
// /admin/cleanup, keeps the newest version, every version a dist-tag
// points at and the version npm installed lately (through an edge too,
// which reports what it served), and unpublishes the rest the way npm
// sees it: gone from the packument, not installable, dist-tags intact.
func TestRetention(t *testing.T) {
	start := func(t *testing.T) *origintest.Env {
		return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.DownloadsReport = 100 * time.Millisecond }})
	}
	clienttest.Targets(t, start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"} {
			c.publish("demo-pkg", v, "v"+v)
		}
		c.publish("demo-pkg", "2.0.0-rc.1", "rc", "--tag", "next")
		c.publish("demo-pkg", "1.4.0", "v1.4.0")
		c.npm(c.home, "dist-tag", "add", "demo-pkg@1.0.0", "stable")
		// Another user's machine (npm publish leaves the tarballs in the
		// publisher's cache): a download the registry serves.
		d := newClient(t, e, "js", tokenAuth(alice))
		d.npm(d.project(), "install", "demo-pkg@1.1.0", "--no-audit", "--no-fund")

		e.Do("PUT", "/api/v1/repositories/js", e.Admin, map[string]any{"retention": map[string]any{"keep_last": 1, "keep_downloaded_days": 7}}).Want(200)
		var ans struct {
			Retention struct {
				Versions int
				Deleted  []struct{ Version string }
			}
		}
		names := func() []string {
			var out []string
			for _, d := range ans.Retention.Deleted {
				out = append(out, d.Version)
			}
			slices.Sort(out)
			return out
		}
		want := []string{"1.2.0", "1.3.0"}
		// The install is recorded once the node that served it reports it.
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			e.Do("POST", "/api/v1/admin/cleanup?dry_run=true", e.Admin, nil).Want(200).JSON(&ans)
			if slices.Equal(names(), want) {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("the dry run would delete %v, want %v", names(), want)
			}
		}
		e.Do("POST", "/api/v1/admin/cleanup", e.Admin, nil).Want(200).JSON(&ans)
		if ans.Retention.Versions != 2 || !slices.Equal(names(), want) {
			t.Fatalf("the run deleted %v", names())
		}

		var versions []string
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			versions = nil
			if err := json.Unmarshal([]byte(c.npm(c.home, "view", "demo-pkg", "versions", "--json")), &versions); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(versions, []string{"1.0.0", "1.1.0", "1.4.0", "2.0.0-rc.1"}) || time.Now().After(end) {
				break
			}
		}
		if !slices.Equal(versions, []string{"1.0.0", "1.1.0", "1.4.0", "2.0.0-rc.1"}) {
			t.Errorf("versions after the retention rules = %v", versions)
		}
		if out := c.npm(c.home, "dist-tag", "ls", "demo-pkg"); out != "latest: 1.4.0\nnext: 2.0.0-rc.1\nstable: 1.0.0\n" {
			t.Errorf("dist-tags after the retention rules = %q", out)
		}
		f := newClient(t, e, "js", tokenAuth(alice)) // a cold cache
		if out, err := f.tryNPM(f.project(), "install", "demo-pkg@1.2.0", "--no-audit", "--no-fund"); err == nil || !strings.Contains(out, "1.2.0") {
			t.Errorf("a deleted version installed: err %v\n%s", err, out)
		}
		dir := f.project()
		f.npm(dir, "install", "demo-pkg@1.1.0", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/demo-pkg/index.js"); !strings.Contains(got, `"v1.1.0"`) {
			t.Errorf("demo-pkg@1.1.0 installed %q", got)
		}
	})
}
