package cargo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// rustupHome is where rustup keeps the toolchains cargo's proxy runs:
// the tests give cargo a HOME of its own.
func rustupHome() string {
	if h := os.Getenv("RUSTUP_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".rustup")
}

// useRegistry makes the sparse index at indexURL cargo's registry
// "depot" (in cargoHome), signed in with token as users store it.
func useRegistry(t *testing.T, cargoHome, indexURL, token string) {
	clienttest.WriteFile(t, filepath.Join(cargoHome, "config.toml"), "[registries.depot]\nindex = \"sparse+"+indexURL+"\"\n"+
		"credential-provider = [\"cargo:token\"]\n\n[net]\nretry = 0\n")
	clienttest.WriteFile(t, filepath.Join(cargoHome, "credentials.toml"), "[registries.depot]\ntoken = \"Bearer "+token+"\"\n")
}

// TestCargoPublishBuildYank: a private registry. cargo publishes two
// versions of a library (the token from cargo's credential provider,
// "Bearer" as users store it), and a consumer crate that needs the newer
// one builds and runs against it; a version cannot be published twice;
// yank hides a version from new resolutions and unyank brings it back;
// owner --list names the publisher; search finds the crate. Without the
// token the registry's config answers 401.
func TestCargoPublishBuildYank(t *testing.T) {
	bins := clienttest.RequireClients(t, "cargo")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("rust", "crates", false)
		clienttest.SubscribeDownloads(t, e)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		e.Do("GET", "/crates/rust/index/config.json", "", nil).Want(401)

		home, work := clienttest.Home(t), t.TempDir()
		cargoHome := filepath.Join(home, ".cargo")
		useRegistry(t, cargoHome, e.URL+"/crates/rust/index/", alice.Token)
		cargo := func(dir string, args ...string) (string, error) {
			return clienttest.TryRun(clienttest.Cmd{Dir: dir, Name: bins["cargo"], Args: args,
				Env: []string{"HOME=" + home, "CARGO_HOME=" + cargoHome, "RUSTUP_HOME=" + rustupHome(), "CARGO_TARGET_DIR=" + filepath.Join(work, "target"),
					"CARGO_TERM_COLOR=never"}})
		}
		must := func(dir string, args ...string) string {
			t.Helper()
			out, err := cargo(dir, args...)
			if err != nil {
				t.Fatalf("cargo %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return out
		}
		lib := func(version, word string) string {
			dir := filepath.Join(work, "demo_lib-"+version)
			clienttest.WriteFile(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \"demo_lib\"\nversion = \""+version+"\"\nedition = \"2021\"\n"+
				"description = \"a demo library\"\nlicense = \"MIT\"\npublish = [\"depot\"]\n")
			clienttest.WriteFile(t, filepath.Join(dir, "src", "lib.rs"), "pub fn greet() -> &'static str { \""+word+"\" }\n")
			return dir
		}
		v1, v2 := lib("0.1.0", "hello from 0.1"), lib("0.2.0", "hello from 0.2")
		must(v1, "publish", "--registry", "depot", "--allow-dirty", "--no-verify")
		must(v2, "publish", "--registry", "depot", "--allow-dirty", "--no-verify")
		if out, err := cargo(v2, "publish", "--registry", "depot", "--allow-dirty", "--no-verify"); err == nil || !strings.Contains(out, "already") {
			t.Fatalf("publishing 0.2.0 again: %v\n%s", err, out)
		}

		// Refused publishes, in cargo's error shape; nothing is stored.
		publish := "/crates/rust/api/v1/crates/new"
		for what, body := range map[string][]byte{
			"a path out of the crate": formattest.CratePublish(t, `{"name":"evil","vers":"0.1.0"}`,
				map[string]string{"evil-0.1.0/Cargo.toml": "", "evil-0.1.0/../../escape.rs": ""}),
			"no Cargo.toml":       formattest.CratePublish(t, `{"name":"evil","vers":"0.1.0"}`, map[string]string{"evil-0.1.0/src/lib.rs": ""}),
			"another crate's dir": formattest.CratePublish(t, `{"name":"evil","vers":"0.1.0"}`, map[string]string{"other-0.1.0/Cargo.toml": ""}),
			"a bad name":          formattest.CratePublish(t, `{"name":"../evil","vers":"0.1.0"}`, map[string]string{"x/Cargo.toml": ""}),
			"a bad version":       formattest.CratePublish(t, `{"name":"evil","vers":"1.0"}`, map[string]string{"evil-1.0/Cargo.toml": ""}),
			"another spelling":    formattest.CratePublish(t, `{"name":"Demo-Lib","vers":"0.9.0"}`, map[string]string{"Demo-Lib-0.9.0/Cargo.toml": ""}),
			"a truncated body":    formattest.CratePublish(t, `{"name":"evil","vers":"0.1.0"}`, map[string]string{"evil-0.1.0/Cargo.toml": ""})[:40],
			"a .crate not gzip'd": append(formattest.CratePublish(t, `{"name":"evil","vers":"0.1.0"}`, nil)[:4+31], 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'),
		} {
			r := e.Do("PUT", publish, alice.Basic(), body)
			if r.Status != 400 || !strings.Contains(string(r.Body), `"errors":[{"detail":`) {
				t.Errorf("publishing %s: %d %s", what, r.Status, r.Body)
			}
		}
		e.Do("GET", "/crates/rust/index/ev/il/evil", alice.Basic(), nil).Want(404)

		app := filepath.Join(work, "app")
		clienttest.WriteFile(t, filepath.Join(app, "Cargo.toml"), "[package]\nname = \"app\"\nversion = \"1.0.0\"\nedition = \"2021\"\npublish = false\n\n"+
			"[dependencies]\ndemo_lib = { version = \"0.2\", registry = \"depot\" }\n")
		clienttest.WriteFile(t, filepath.Join(app, "src", "main.rs"), "fn main() { println!(\"{}\", demo_lib::greet()); }\n")
		must(app, "build")
		if out, err := exec.Command(filepath.Join(work, "target", "debug", "app")).Output(); err != nil || strings.TrimSpace(string(out)) != "hello from 0.2" {
			t.Fatalf("the app says %q (%v)", out, err)
		}
		clienttest.WantEvents(t, e, "artifact.uploaded", "crates", "demo_lib@0.1.0", "demo_lib@0.2.0")
		clienttest.WantEvents(t, e, "artifact.downloaded", "", "demo_lib@0.2.0")

		must(work, "yank", "--registry", "depot", "demo_lib@0.2.0")
		if r := e.Do("GET", "/crates/rust/index/de/mo/demo_lib", alice.Basic(), nil).Want(200); !strings.Contains(string(r.Body), `"vers":"0.2.0"`) ||
			!strings.Contains(string(r.Body), `"yanked":true`) {
			t.Fatalf("index after the yank:\n%s", r.Body)
		}
		os.Remove(filepath.Join(app, "Cargo.lock"))
		if out, err := cargo(app, "generate-lockfile"); err == nil {
			t.Fatalf("resolving demo_lib 0.2 with 0.2.0 yanked succeeded:\n%s", out)
		}
		must(work, "yank", "--undo", "--registry", "depot", "demo_lib@0.2.0")
		must(app, "generate-lockfile")

		if out := must(work, "owner", "--list", "--registry", "depot", "demo_lib"); !strings.Contains(out, alice.Name) {
			t.Fatalf("owners:\n%s", out)
		}
		if out := must(work, "search", "--registry", "depot", "demo"); !strings.Contains(out, `demo_lib = "0.2.0"`) {
			t.Fatalf("search:\n%s", out)
		}
	})
}
