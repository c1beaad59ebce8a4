package pypi_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestTwineUploadPipInstall publishes two projects, the second depending
// on the first, with twine (API token and password), and installs the
// second with pip from wheels and from sdists: the dependency comes from
// us as well, and nothing else is ever asked.
func TestTwineUploadPipInstall(t *testing.T) {
	clienttest.RequireClients(t, "twine", "python3", debianPython)
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("py", "pypi", false)
		clienttest.SubscribeDownloads(t, e)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")

		lib := build(t, project{Name: "Demo_Pkg", Module: "demo_pkg", Version: "1.0.0",
			Body: "def greet():\n    return 'hello from demo_pkg'\n"})
		app := build(t, project{Name: "Demo.App", Module: "demo_app", Version: "2.0.0", Requires: []string{"demo-pkg>=1.0"},
			Body: "from demo_pkg import greet\n\ndef main():\n    return greet() + ' via demo_app'\n"})

		if out, err := twine(t, e, "py", alice.Name, alice.Token, nil, lib...); err != nil {
			t.Fatalf("twine upload with an API token: %v\n%s", err, out)
		}
		if out, err := twine(t, e, "py", alice.Name, alice.Password, nil, app...); err != nil {
			t.Fatalf("twine upload with a password: %v\n%s", err, out)
		}

		t.Run("duplicate", func(t *testing.T) {
			out, err := twine(t, e, "py", alice.Name, alice.Token, nil, lib[1])
			if err == nil || !strings.Contains(out, "400") {
				t.Fatalf("re-uploading %s: err %v, want a 400 failure\n%s", filepath.Base(lib[1]), err, out)
			}
			out, err = twine(t, e, "py", alice.Name, alice.Token, []string{"--skip-existing"}, lib...)
			if err != nil || !strings.Contains(out, "Skipping") {
				t.Fatalf("--skip-existing: %v\n%s", err, out)
			}
		})

		t.Run("rest api", func(t *testing.T) {
			checkREST(t, e.For(t), repoID, []upload{
				{Package: "demo-pkg", Version: "1.0.0", User: alice.Name, Files: lib},
				{Package: "demo-app", Version: "2.0.0", User: alice.Name, Files: app},
			})
		})

		t.Run("simple index", func(t *testing.T) { checkIndex(t, e.URL+"/pypi/py", alice.Name, alice.Token, lib) })

		index := "http://" + alice.Name + ":" + alice.Token + "@" + clienttest.HostPort(e) + "/pypi/py/simple/"

		t.Run("pip install wheels", func(t *testing.T) {
			bin := venv(t, "python3")
			out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
				"install", "-v", "--no-cache-dir", "--index-url", index, "Demo.App==2.0.0"}})
			// pip 23.2 resolves from the PEP 658 metadata files, then fetches
			// the wheels.
			for _, want := range []string{filepath.Base(app[1]) + ".metadata", filepath.Base(lib[1]) + ".metadata",
				filepath.Base(app[1]), filepath.Base(lib[1]), "Successfully installed"} {
				if !strings.Contains(out, want) {
					t.Errorf("pip install output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(strings.ToLower(out), "warning") {
				t.Errorf("pip warned:\n%s", out)
			}
			clienttest.WantEvents(t, e, "artifact.uploaded", "pypi", "demo-pkg@1.0.0", "demo-app@2.0.0")
			clienttest.WantEvents(t, e, "artifact.downloaded", "", "demo-pkg@1.0.0", "demo-app@2.0.0")
			run := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "python"), Args: []string{
				"-c", "import demo_app; print(demo_app.main())"}})
			if strings.TrimSpace(run) != "hello from demo_pkg via demo_app" {
				t.Fatalf("installed code says %q", run)
			}
		})

		t.Run("pip install sdists", func(t *testing.T) {
			// Debian's python brings setuptools and wheel to build the sdists
			// without an isolated build env (that would fetch setuptools).
			bin := venv(t, debianPython, "--system-site-packages")
			out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
				"install", "--no-cache-dir", "--no-binary", ":all:", "--no-build-isolation", "--index-url", index, "demo-app==2.0.0"}})
			for _, want := range []string{filepath.Base(app[0]), filepath.Base(lib[0]), "Successfully installed"} {
				if !strings.Contains(out, want) {
					t.Errorf("pip install output lacks %q:\n%s", want, out)
				}
			}
			run := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "python"), Args: []string{
				"-c", "import demo_app; print(demo_app.main())"}})
			if strings.TrimSpace(run) != "hello from demo_pkg via demo_app" {
				t.Fatalf("installed code says %q", run)
			}
		})

		t.Run("pip download and index versions", func(t *testing.T) {
			bin := venv(t, debianPython, "--system-site-packages")
			dest := t.TempDir()
			for _, args := range [][]string{{"--only-binary", ":all:"}, {"--no-binary", ":all:", "--no-build-isolation"}} {
				clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: append([]string{
					"download", "--no-deps", "--no-cache-dir", "-d", dest, "--index-url", index, "demo-pkg==1.0.0"}, args...)})
			}
			for _, f := range lib {
				want, _ := sha256File(t, f)
				got, _ := sha256File(t, filepath.Join(dest, filepath.Base(f)))
				if got != want {
					t.Errorf("downloaded %s has sha256 %s, uploaded %s", filepath.Base(f), got, want)
				}
			}
			out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
				"index", "versions", "--index-url", index, "Demo_App"}})
			if !strings.Contains(out, "(2.0.0)") || !strings.Contains(out, "Available versions: 2.0.0") {
				t.Fatalf("pip index versions:\n%s", out)
			}
		})
	})
}
