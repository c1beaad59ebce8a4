package pypi_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestUvAndPoetry: uv publishes dists (token as password) and installs
// from the simple index into a fresh environment; poetry builds its own
// project and publishes it to a repository configured by name with
// http-basic credentials; pip's index shows both.
func TestUvAndPoetry(t *testing.T) {
	bins := clienttest.RequireClients(t, "uv", "poetry", debianPython)
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("py", "pypi", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		home := clienttest.Home(t)
		env := []string{"HOME=" + home, "UV_CACHE_DIR=" + filepath.Join(home, "uv-cache"), "UV_NO_PROGRESS=1", "UV_PYTHON_DOWNLOADS=never",
			"POETRY_CONFIG_DIR=" + filepath.Join(home, "poetry-config"), "POETRY_CACHE_DIR=" + filepath.Join(home, "poetry-cache"),
			"POETRY_VIRTUALENVS_CREATE=false", "NO_COLOR=1"}
		run := func(dir, name string, args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env, Name: bins[name], Args: args})
		}

		dists := build(t, project{Name: "uv-made", Module: "uv_made", Version: "1.0.0", Body: "WORD = 'from uv'\n"})
		run(t.TempDir(), "uv", append([]string{"publish", "--publish-url", e.URL + "/pypi/py/", "--username", alice.Name, "--password", alice.Token}, dists...)...)

		proj := filepath.Join(t.TempDir(), "poetry_made")
		clienttest.WriteFile(t, filepath.Join(proj, "pyproject.toml"), "[project]\nname = \"poetry-made\"\nversion = \"2.0.0\"\ndescription = \"made by poetry\"\n"+
			"requires-python = \">=3.8\"\n\n[tool.poetry]\npackages = [{ include = \"poetry_made\" }]\n\n"+
			"[build-system]\nrequires = [\"poetry-core>=2.0\"]\nbuild-backend = \"poetry.core.masonry.api\"\n")
		clienttest.WriteFile(t, filepath.Join(proj, "poetry_made", "__init__.py"), "WORD = 'from poetry'\n")
		clienttest.WriteFile(t, filepath.Join(proj, "README.md"), "poetry made\n")
		run(proj, "poetry", "config", "repositories.depot", e.URL+"/pypi/py/")
		run(proj, "poetry", "config", "http-basic.depot", alice.Name, alice.Token)
		run(proj, "poetry", "build")
		run(proj, "poetry", "publish", "--repository", "depot")

		index := strings.Replace(e.URL, "://", "://"+alice.Name+":"+alice.Token+"@", 1) + "/pypi/py/simple/"
		venvDir := filepath.Join(t.TempDir(), "venv")
		run(home, "uv", "venv", "--python", debianPython, venvDir)
		run(home, "uv", "pip", "install", "--python", filepath.Join(venvDir, "bin", "python"), "--index-url", index, "uv-made==1.0.0", "poetry-made==2.0.0")
		out := clienttest.Run(t, clienttest.Cmd{Env: env, Name: filepath.Join(venvDir, "bin", "python"), Args: []string{"-c",
			"import uv_made, poetry_made; print(uv_made.WORD, '/', poetry_made.WORD)"}})
		if strings.TrimSpace(out) != "from uv / from poetry" {
			t.Fatalf("installed code says %q", out)
		}
		for _, p := range []string{"uv-made", "poetry-made"} {
			if r := e.Do("GET", "/pypi/py/simple/"+p+"/", alice.Basic(), nil).Want(200); !strings.Contains(string(r.Body), ".whl") {
				t.Fatalf("index of %s:\n%s", p, r.Body)
			}
		}
	})
}
