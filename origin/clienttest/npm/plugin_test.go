package npm

import (
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestDisabledHandler: the npm format handler disabled as a plugin, npm
// install fails saying so (at the origin, and at an edge from its
// replica) while the package's record stays and the generic handler goes
// on serving; enabled again, the same install works.
func TestDisabledHandler(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID, u := setup(t, e)
		files := e.CreateRepo("files", "generic", false)
		e.Grant(files, u.ID, false, "read", "write")
		c := newClient(t, e, "js", tokenAuth(u))
		c.publish("switched", "1.0.0", "still here")
		e.Do("PUT", "/generic/files/tool/1.0/t.bin", u.Basic(), "bytes").Want(201)

		var pl struct {
			ID      string
			Enabled bool
			Builtin bool
		}
		e.Do("POST", "/api/v1/plugins/npm/disable", u.Basic(), nil).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/plugins/npm/disable", e.Admin, nil).Want(200).JSON(&pl)
		if pl.ID != "npm" || pl.Enabled || !pl.Builtin {
			t.Fatalf("disable: %+v", pl)
		}
		dir := c.project()
		var out string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			var err error
			if out, err = c.tryNPM(dir, "install", "switched@1.0.0"); err != nil && strings.Contains(out, "disabled") {
				break
			}
		}
		if !strings.Contains(out, "the npm format handler is disabled") {
			t.Fatalf("npm install with the handler disabled:\n%s", out)
		}
		e.Do("GET", "/generic/files/tool/1.0/t.bin", u.Basic(), nil).Want(200)
		if r := e.Do("GET", "/api/v1/packages?repository_id="+repoID, e.Admin, nil).Want(200); !strings.Contains(string(r.Body), "switched") {
			t.Fatalf("the package's record: %s", r.Body)
		}
		e.Do("DELETE", "/api/v1/plugins/npm", e.Admin, nil).WantError(409, "CONFLICT")

		e.Do("POST", "/api/v1/plugins/npm/enable", e.Admin, nil).Want(200)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			var err error
			if out, err = c.tryNPM(dir, "install", "switched@1.0.0"); err == nil {
				break
			}
		}
		if got := readFile(t, dir, "node_modules/switched/index.js"); !strings.Contains(got, "still here") {
			t.Fatalf("installed after enabling: %q\n%s", got, out)
		}
	})
}
