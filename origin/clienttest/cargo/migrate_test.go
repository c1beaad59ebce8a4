package cargo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestMigrateFromArtifactory: a Cargo repository of Artifactory, one
// crate packaged by cargo and one that depends on it through the source
// repository's own index (as cargo normalises such a dependency into the
// .crate), moves here (its index left to Depot); cargo builds an app
// against the migrated crates, the dependency now resolved here.
func TestMigrateFromArtifactory(t *testing.T) {
	bins := clienttest.RequireClients(t, "cargo")
	e := clienttest.Start(t)
	home, work := clienttest.Home(t), t.TempDir()
	cargoHome := filepath.Join(home, ".cargo")
	env := []string{"HOME=" + home, "CARGO_HOME=" + cargoHome, "RUSTUP_HOME=" + rustupHome(), "CARGO_TARGET_DIR=" + filepath.Join(work, "target"),
		"CARGO_TERM_COLOR=never"}
	lib := filepath.Join(work, "demo_lib")
	clienttest.WriteFile(t, filepath.Join(lib, "Cargo.toml"), "[package]\nname = \"demo_lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"+
		"description = \"a demo library\"\nlicense = \"MIT\"\n")
	clienttest.WriteFile(t, filepath.Join(lib, "src", "lib.rs"), "pub fn greet() -> &'static str { \"hello from demo_lib\" }\n")
	clienttest.Run(t, clienttest.Cmd{Dir: lib, Env: env, Name: bins["cargo"], Args: []string{"package", "--allow-dirty", "--no-verify"}})
	crate, err := os.ReadFile(filepath.Join(work, "target", "package", "demo_lib-0.1.0.crate"))
	if err != nil {
		t.Fatal(err)
	}

	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("cargo-local", "LOCAL", "Cargo", "crates")
	af.Put("cargo-local", "crates/demo_lib/demo_lib-0.1.0.crate", artifactorytest.File{Data: crate})
	wrapper := formattest.Tgz(t, map[string]string{
		"demo_wrap-0.2.0/Cargo.toml": "[package]\nedition = \"2021\"\nname = \"demo_wrap\"\nversion = \"0.2.0\"\ndescription = \"wraps demo_lib\"\nlicense = \"MIT\"\n\n" +
			"[dependencies.demo_lib]\nversion = \"^0.1\"\nregistry-index = \"sparse+" + af.BaseURL() + "/api/cargo/cargo-local/index/\"\n",
		"demo_wrap-0.2.0/src/lib.rs": "pub fn greet() -> String { format!(\"{} (wrapped)\", demo_lib::greet()) }\n"})
	af.Put("cargo-local", "crates/demo_wrap/demo_wrap-0.2.0.crate", artifactorytest.File{Data: wrapper})
	af.Put("cargo-local", ".index/de/mo/demo_lib", artifactorytest.File{Data: []byte(`{"name":"demo_lib","vers":"0.1.0"}` + "\n")})
	af.Put("cargo-local", ".index/config.json", artifactorytest.File{Data: []byte(`{"dl":"x"}`)})

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af", "source_password": "pw",
		"repositories": []string{"cargo-local"}})
	clienttest.WantMigrated(t, e, m, 2, 2)
	if idx := string(e.Do("GET", "/crates/cargo-local/index/de/mo/demo_wrap", e.Admin, nil).Want(200).Body); !strings.Contains(idx, `"registry":null`) {
		t.Fatalf("demo_wrap's dependency is not on this registry:\n%s", idx)
	}

	alice := clienttest.NewUser(e, "alice")
	var repo struct{ ID string }
	e.Do("GET", "/api/v1/repositories/cargo-local", e.Admin, nil).Want(200).JSON(&repo)
	e.Grant(repo.ID, alice.ID, false, "read")
	useRegistry(t, cargoHome, e.URL+"/crates/cargo-local/index/", alice.Token)
	app := filepath.Join(work, "app")
	clienttest.WriteFile(t, filepath.Join(app, "Cargo.toml"), "[package]\nname = \"app\"\nversion = \"1.0.0\"\nedition = \"2021\"\npublish = false\n\n"+
		"[dependencies]\ndemo_wrap = { version = \"0.2\", registry = \"depot\" }\n")
	clienttest.WriteFile(t, filepath.Join(app, "src", "main.rs"), "fn main() { println!(\"{}\", demo_wrap::greet()); }\n")
	clienttest.Run(t, clienttest.Cmd{Dir: app, Env: env, Name: bins["cargo"], Args: []string{"build"}})
	if out, err := exec.Command(filepath.Join(work, "target", "debug", "app")).Output(); err != nil || strings.TrimSpace(string(out)) != "hello from demo_lib (wrapped)" {
		t.Fatalf("the app says %q (%v)", out, err)
	}
}
