package conda_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestRESTDelete: packages deleted through the REST API, one of each kind
// (a .conda and a .tar.bz2), leave repodata.json, so rattler, whose cache
// saw them, now solves "greet" to the version before them and installs
// it, and a spec only they matched is the solver's error; their files
// are no longer served.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "python3", "bzip2")
	if out, err := exec.Command(bins["python3"], "-c", "import rattler").CombinedOutput(); err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatalf("py-rattler is required: %v\n%s", err, out)
		}
		t.Skipf("py-rattler not installed: %s", out)
	}
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		chanID := e.CreateRepo("chan", "conda", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(chanID, alice.ID, false, "write", "delete")
		files := map[string][]byte{}
		for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
			i, p := formattest.CondaFiles("greet", v, "noarch", []string{}, "greet "+v+"\n")
			file := "greet-" + v + "-0.tar.bz2"
			files[file] = tarBz2(t, i, p)
			if v == "1.2.0" {
				file = "greet-" + v + "-0.conda"
				files[file] = formattest.DotConda(t, "greet-"+v+"-0", i, p)
			}
			e.Do("PUT", "/conda/chan/noarch/"+file, alice.Basic(), files[file]).Want(201)
		}
		listed := func() []string {
			t.Helper()
			var rd struct {
				Packages      map[string]struct{ Version string } `json:"packages"`
				PackagesConda map[string]struct{ Version string } `json:"packages.conda"`
			}
			e.Do("GET", "/conda/chan/noarch/repodata.json", alice.Basic(), nil).Want(200).JSON(&rd)
			var out []string
			for file := range rd.Packages {
				out = append(out, file)
			}
			for file := range rd.PackagesConda {
				out = append(out, file)
			}
			slices.Sort(out)
			return out
		}
		if got := listed(); len(got) != 3 {
			t.Fatalf("repodata.json lists %v before the deletes", got)
		}

		work := t.TempDir()
		script, _ := filepath.Abs("solve.py")
		channel := strings.Replace(e.URL, "://", "://"+alice.Name+":"+alice.Token+"@", 1) + "/conda/chan"
		solve := func(prefix, spec string) clienttest.Cmd {
			return clienttest.Cmd{Dir: work, Env: []string{"HOME=" + clienttest.Home(t)}, Name: bins["python3"],
				Args: []string{script, channel, filepath.Join(work, prefix), filepath.Join(work, "cache"), spec}}
		}
		solved := func(out string) string {
			t.Helper()
			var s []struct{ Name, Version string }
			if err := json.Unmarshal([]byte(lastLine(out)), &s); err != nil || len(s) != 1 || s[0].Name != "greet" {
				t.Fatalf("rattler solved (%v):\n%s", err, out)
			}
			return s[0].Version
		}
		// rattler's cache holds the repodata that offers 1.2.0.
		if v := solved(clienttest.Run(t, solve("before", "greet"))); v != "1.2.0" {
			t.Fatalf("before the deletes rattler solved greet %s, want 1.2.0", v)
		}

		for _, v := range []string{"1.2.0", "1.1.0"} {
			e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), chanID, "greet", v), alice.Basic(), nil).Want(204)
		}
		if got := listed(); !slices.Equal(got, []string{"greet-1.0.0-0.tar.bz2"}) {
			t.Fatalf("repodata.json lists %v after deleting 1.2.0 and 1.1.0", got)
		}
		e.Do("GET", "/conda/chan/noarch/greet-1.2.0-0.conda", alice.Basic(), nil).Want(404)
		e.Do("GET", "/conda/chan/noarch/greet-1.1.0-0.tar.bz2", alice.Basic(), nil).Want(404)

		if v := solved(clienttest.Run(t, solve("after", "greet"))); v != "1.0.0" {
			t.Fatalf("after the deletes rattler solved greet %s, want 1.0.0", v)
		}
		if got, err := os.ReadFile(filepath.Join(work, "after", "share", "greet", "hello.txt")); err != nil || string(got) != "greet 1.0.0\n" {
			t.Fatalf("installed greet: %q %v", got, err)
		}
		out, err := clienttest.TryRun(solve("deleted", "greet >1.0.0"))
		if err == nil || !strings.Contains(out, "SolverError") || !strings.Contains(out, "greet >1.0.0") {
			t.Fatalf("solving for a deleted version: %v\n%s", err, out)
		}
	})
}
