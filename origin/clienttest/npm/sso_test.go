package npm

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestInstallWithSingleSignOnToken: a user who signs in only with the
// OpenID provider makes an API token and npm installs with it from a
// private repository the user's provider group may read; through an edge
// as well.
func TestInstallWithSingleSignOnToken(t *testing.T) {
	clienttest.RequireClients(t, "npm", "node")
	clienttest.Targets(t, clienttest.StartWithSSO, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("js", "npm", false)
		alice := clienttest.NewUser(e, "alice-local")
		e.Grant(repoID, alice.ID, false, "read", "write")
		newClient(t, e, "js", tokenAuth(alice)).publish("sso-lib", "1.0.0", "for the team")

		session := "Bearer " + clienttest.SignInWithSSO(t, e, "bob") // the provider puts bob in developers
		e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": repoID, "group_id": "developers",
			"permissions": []string{"read"}}).Want(201)
		var tok struct{ Token string }
		e.Do("POST", "/api/v1/users/me/tokens", session, map[string]any{"name": "npm", "scopes": []string{"repository:read"}}).
			Want(201).JSON(&tok)
		bob := newClient(t, e, "js", "_authToken="+tok.Token)
		dir := bob.project()
		bob.npm(dir, "install", "sso-lib@1.0.0", "--no-audit", "--no-fund")
		if got := readFile(t, dir, "node_modules/sso-lib/index.js"); !strings.Contains(got, "for the team") {
			t.Fatalf("installed index.js = %q", got)
		}
	})
}
