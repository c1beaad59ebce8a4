package cargo_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestCrateScans: crates published with cargo are scanned on upload
// against the crates.io advisories: hyper 0.14.9 with exactly the
// findings of the data's test case and the case's unaffected version
// with none; a crate pinning regex "=1.5.4" (published here too) with
// regex's test case as dependency findings, its "1" on hyper (a caret
// range) reported as not scanned.
func TestCrateScans(t *testing.T) {
	bins := clienttest.RequireClients(t, "cargo")
	e := clienttest.Start(t)
	repoID := e.CreateRepo("rust", "crates", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	clienttest.LoadAdvisories(t, e, "crates.io")
	home, work := clienttest.Home(t), t.TempDir()
	cargoHome := filepath.Join(home, ".cargo")
	useRegistry(t, cargoHome, e.URL+"/crates/rust/index/", alice.Token)
	publish := func(name, version, deps string) {
		t.Helper()
		dir := filepath.Join(work, name+"-"+version)
		clienttest.WriteFile(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \""+name+"\"\nversion = \""+version+"\"\nedition = \"2021\"\n"+
			"description = \"a stand-in\"\nlicense = \"MIT\"\npublish = [\"depot\"]\n\n[dependencies]\n"+deps)
		clienttest.WriteFile(t, filepath.Join(dir, "src", "lib.rs"), "pub fn f() {}\n")
		out, err := clienttest.TryRun(clienttest.Cmd{Dir: dir, Name: bins["cargo"], Args: []string{"publish", "--registry", "depot", "--allow-dirty", "--no-verify"},
			Env: []string{"HOME=" + home, "CARGO_HOME=" + cargoHome, "RUSTUP_HOME=" + rustupHome(), "CARGO_TARGET_DIR=" + filepath.Join(work, "target"), "CARGO_TERM_COLOR=never"}})
		if err != nil {
			t.Fatalf("cargo publish %s %s: %v\n%s", name, version, err, out)
		}
	}
	publish("regex", "1.5.4", "")
	publish("hyper", "0.14.9", "")
	publish("hyper", "0.14.28", "")
	publish("app_lib", "0.1.0", "regex = { version = \"=1.5.4\", registry = \"depot\" }\nhyper = { version = \"0.14\", registry = \"depot\" }\n")

	clienttest.WantCaseScans(t, e, repoID, "crates.io", "hyper")
	r := clienttest.WantDependencyScan(t, e, repoID, "app_lib", "0.1.0", "crates.io", "regex")
	if len(r.Report.NotScanned) != 1 || !strings.HasPrefix(r.Report.NotScanned[0].What, "hyper ") {
		t.Errorf("not scanned: %+v", r.Report.NotScanned)
	}
}
