package cargo_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRESTDelete: a crate version deleted through the REST API leaves the
// sparse index, so cargo, whose index cache saw it, now resolves and
// fetches the version before it, and a requirement only it met fails to
// resolve; the .crate is no longer served. A yanked version deleted so
// and published again is not yanked: its flag went with it.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "cargo")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("rust", "crates", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")

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
		src := map[string]string{}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			src[v] = filepath.Join(work, "demo_lib-"+v)
			clienttest.WriteFile(t, filepath.Join(src[v], "Cargo.toml"), "[package]\nname = \"demo_lib\"\nversion = \""+v+"\"\nedition = \"2021\"\n"+
				"description = \"a demo library\"\nlicense = \"MIT\"\npublish = [\"depot\"]\n")
			clienttest.WriteFile(t, filepath.Join(src[v], "src", "lib.rs"), "pub fn greet() -> &'static str { \"hello from "+v+"\" }\n")
			must(src[v], "publish", "--registry", "depot", "--allow-dirty", "--no-verify")
		}
		// indexed is the crate's index file: each version and whether it
		// is yanked (nil: no index file).
		indexed := func() map[string]bool {
			t.Helper()
			r := e.Do("GET", "/crates/rust/index/de/mo/demo_lib", alice.Basic(), nil)
			if r.Status == 404 {
				return nil
			}
			r.Want(200)
			out := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
				var line struct {
					Vers   string `json:"vers"`
					Yanked bool   `json:"yanked"`
				}
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("index line %q: %v", l, err)
				}
				out[line.Vers] = line.Yanked
			}
			return out
		}
		app := func(req string) string {
			dir := filepath.Join(work, "app")
			clienttest.WriteFile(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \"app\"\nversion = \"1.0.0\"\nedition = \"2021\"\npublish = false\n\n"+
				"[dependencies]\ndemo_lib = { version = \""+req+"\", registry = \"depot\" }\n")
			clienttest.WriteFile(t, filepath.Join(dir, "src", "main.rs"), "fn main() { println!(\"{}\", demo_lib::greet()); }\n")
			os.Remove(filepath.Join(dir, "Cargo.lock"))
			return dir
		}
		locked := func(dir string) string {
			t.Helper()
			lock, err := os.ReadFile(filepath.Join(dir, "Cargo.lock"))
			if err != nil {
				t.Fatal(err)
			}
			_, rest, _ := strings.Cut(string(lock), "name = \"demo_lib\"\nversion = \"")
			v, _, _ := strings.Cut(rest, "\"")
			return v
		}
		// cargo's index cache holds 1.1.0.
		must(app("1"), "generate-lockfile")
		if v := locked(filepath.Join(work, "app")); v != "1.1.0" {
			t.Fatalf("before the delete cargo locked demo_lib %q, want 1.1.0", v)
		}

		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demo_lib", "1.1.0"), alice.Basic(), nil).Want(204)
		if got := indexed(); len(got) != 1 || got["1.0.0"] {
			t.Fatalf("index after deleting 1.1.0: %v", got)
		}
		e.Do("GET", "/crates/rust/api/v1/crates/demo_lib/1.1.0/download", alice.Basic(), nil).Want(404)
		dir := app("1")
		must(dir, "fetch")
		if v := locked(dir); v != "1.0.0" {
			t.Fatalf("after the delete cargo locked demo_lib %q, want 1.0.0", v)
		}
		if out, err := cargo(app("=1.1.0"), "generate-lockfile"); err == nil || !strings.Contains(out, "failed to select a version") {
			t.Fatalf("resolving the deleted 1.1.0: %v\n%s", err, out)
		}

		// A yanked version deleted and published again starts unyanked.
		must(work, "yank", "--registry", "depot", "demo_lib@1.0.0")
		if got := indexed(); !got["1.0.0"] {
			t.Fatalf("index after the yank: %v", got)
		}
		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demo_lib", "1.0.0"), alice.Basic(), nil).Want(204)
		if got := indexed(); got != nil {
			t.Fatalf("index after deleting every version: %v", got)
		}
		must(src["1.0.0"], "publish", "--registry", "depot", "--allow-dirty", "--no-verify")
		if got := indexed(); len(got) != 1 || got["1.0.0"] {
			t.Fatalf("index after publishing 1.0.0 again (true: yanked): %v", got)
		}
		dir = app("1")
		must(dir, "generate-lockfile")
		if v := locked(dir); v != "1.0.0" {
			t.Fatalf("after publishing 1.0.0 again cargo locked demo_lib %q", v)
		}
	})
}
