package pypi_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestPipInstallWithDirectoryPassword: pip installs from a private
// repository with the password of a directory (LDAP) user who may read
// there through the group the directory puts them in; through an edge as
// well.
func TestPipInstallWithDirectoryPassword(t *testing.T) {
	clienttest.RequireClients(t, "twine", "python3", debianPython)
	clienttest.Targets(t, clienttest.StartWithDirectory, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("py", "pypi", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": repoID, "group_id": clienttest.DirectoryGroup,
			"permissions": []string{"read"}}).Want(201)
		lib := build(t, project{Name: "team_lib", Module: "team_lib", Version: "1.0.0", Body: "def hello():\n    return 'from the team'\n"})
		if out, err := twine(t, e, "py", alice.Name, alice.Token, nil, lib...); err != nil {
			t.Fatalf("twine upload: %v\n%s", err, out)
		}
		index := "http://" + clienttest.DirectoryUser + ":" + clienttest.DirectoryPassword + "@" + clienttest.HostPort(e) + "/pypi/py/simple/"
		bin := venv(t, "python3")
		clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
			"install", "--no-cache-dir", "--index-url", index, "team-lib==1.0.0"}})
		out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "python"), Args: []string{
			"-c", "import team_lib; print(team_lib.hello())"}})
		if !strings.Contains(out, "from the team") {
			t.Fatalf("installed team_lib says %q", out)
		}
	})
}
