package pypi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
)

// TestMigrateFromArtifactory: a PyPI repository of an Artifactory (a
// wheel and an sdist of a project named with capitals and a dot, in its
// <name>/<version>/ layout, and its own .pypi index pages) is migrated
// here: each distribution is uploaded as twine uploads it, the index
// pages are left to the registry, and pip installs the project from here.
func TestMigrateFromArtifactory(t *testing.T) {
	clienttest.RequireClients(t, "python3")
	e := clienttest.Start(t)
	dists := build(t, project{Name: "Demo.Lib", Module: "demo_lib", Version: "1.2.0", Body: "WORD = 'migrated'\n"})
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("pypi-local", "LOCAL", "Pypi", "python packages")
	for _, d := range dists {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		af.Put("pypi-local", "Demo.Lib/1.2.0/"+filepath.Base(d), artifactorytest.File{Data: data})
	}
	af.Put("pypi-local", ".pypi/demo-lib.html", artifactorytest.File{Data: []byte("<html></html>")})

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af-admin", "source_password": "af-password",
		"repositories": []string{"pypi-local"}})
	clienttest.WantMigrated(t, e, m, 2, 1)
	index := "http://admin:" + origintest.AdminPassword + "@" + clienttest.HostPort(e) + "/pypi/pypi-local/simple/"
	bin := venv(t, "python3")
	out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
		"install", "--no-cache-dir", "--index-url", index, "demo-lib==1.2.0"}})
	if !strings.Contains(out, "Successfully installed") {
		t.Fatalf("pip install:\n%s", out)
	}
	if got := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "python"), Args: []string{"-c", "import demo_lib; print(demo_lib.WORD)"}}); strings.TrimSpace(got) != "migrated" {
		t.Errorf("the installed module says %q", got)
	}
}
