package conda_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestMigrateFromArtifactory: a conda channel of Artifactory (packages
// in their subdirs, beside the repodata and channeldata it made) moves
// into a channel made here beforehand; py-rattler then solves and
// installs from Depot what it installed from the source.
func TestMigrateFromArtifactory(t *testing.T) {
	bins := clienttest.RequireClients(t, "python3", "bzip2")
	if out, err := exec.Command(bins["python3"], "-c", "import rattler").CombinedOutput(); err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatalf("py-rattler is required: %v\n%s", err, out)
		}
		t.Skipf("py-rattler not installed: %s", out)
	}
	e := clienttest.Start(t)
	e.CreateRepo("conda-local", "conda", true)
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("conda-local", "LOCAL", "Conda", "a channel")
	i, p := formattest.CondaFiles("base", "1.0.0", "linux-64", []string{}, "base 1.0.0\n")
	af.Put("conda-local", "linux-64/base-1.0.0-0.tar.bz2", artifactorytest.File{Data: tarBz2(t, i, p)})
	i, p = formattest.CondaFiles("greet", "1.1.0", "noarch", []string{"base >=1"}, "greet 1.1.0\n")
	af.Put("conda-local", "noarch/greet-1.1.0-0.conda", artifactorytest.File{Data: formattest.DotConda(t, "greet-1.1.0-0", i, p)})
	for _, meta := range []string{"noarch/repodata.json", "linux-64/repodata.json", "linux-64/repodata.json.bz2", "channeldata.json"} {
		af.Put("conda-local", meta, artifactorytest.File{Data: []byte(`{"packages":{}}`)})
	}

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af", "source_password": "pw",
		"repositories": []string{"conda-local"}})
	clienttest.WantMigrated(t, e, m, 2, 4)

	work := t.TempDir()
	prefix := filepath.Join(work, "prefix")
	script, _ := filepath.Abs("solve.py")
	out := clienttest.Run(t, clienttest.Cmd{Dir: work, Env: []string{"HOME=" + clienttest.Home(t)}, Name: bins["python3"],
		Args: []string{script, e.URL + "/conda/conda-local", prefix, filepath.Join(work, "cache"), "greet"}})
	var solved []struct{ Name, Version string }
	if err := json.Unmarshal([]byte(lastLine(out)), &solved); err != nil || len(solved) != 2 {
		t.Fatalf("rattler solved (%v):\n%s", err, out)
	}
	for name, want := range map[string]string{"greet": "greet 1.1.0\n", "base": "base 1.0.0\n"} {
		if got, err := os.ReadFile(filepath.Join(prefix, "share", name, "hello.txt")); err != nil || string(got) != want {
			t.Errorf("installed %s: %q %v", name, got, err)
		}
	}
	if !strings.Contains(string(e.Do("GET", "/conda/conda-local/noarch/repodata.json", "", nil).Want(200).Body), "greet-1.1.0-0.conda") {
		t.Errorf("the repodata here lacks greet")
	}
}
