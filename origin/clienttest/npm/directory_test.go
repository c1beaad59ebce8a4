package npm

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestInstallWithDirectoryPassword: npm installs from a private
// repository with the password of a directory (LDAP) user, who has never
// signed in before and may read there through the group the directory
// puts them in; through an edge as well.
func TestInstallWithDirectoryPassword(t *testing.T) {
	clienttest.RequireClients(t, "npm", "node")
	clienttest.Targets(t, clienttest.StartWithDirectory, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("js", "npm", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "read", "write")
		e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": repoID, "group_id": clienttest.DirectoryGroup,
			"permissions": []string{"read"}}).Want(201)
		newClient(t, e, "js", tokenAuth(alice)).publish("team-lib", "1.0.0", "from the team")

		dana := newClient(t, e, "js", "_auth="+base64.StdEncoding.EncodeToString(
			[]byte(clienttest.DirectoryUser+":"+clienttest.DirectoryPassword)))
		dir := dana.project()
		dana.npm(dir, "install", "team-lib@1.0.0", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/team-lib/index.js"); !strings.Contains(got, "from the team") {
			t.Fatalf("installed index.js = %q", got)
		}
		wrong := newClient(t, e, "js", "_auth="+base64.StdEncoding.EncodeToString([]byte(clienttest.DirectoryUser+":wrong")))
		if out, err := wrong.tryNPM(wrong.project(), "install", "team-lib@1.0.0"); err == nil || !strings.Contains(out, "401") {
			t.Fatalf("a wrong directory password installed: %v\n%s", err, out)
		}
	})
}
