package pypi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// debianPython has setuptools and wheel (the pyenv python lacks wheel), so
// it builds the dists and backs the venv that installs from sdists.
const debianPython = "/usr/bin/python3"

// project is a setuptools project to build with the real tools.
type project struct {
	Name, Module, Version string
	Requires              []string // install_requires
	Body                  string   // the module's __init__.py
}

// build writes the project and runs "setup.py sdist bdist_wheel"; it
// returns the dist files, sdist first.
func build(t *testing.T, p project) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), p.Module)
	reqs := ""
	if len(p.Requires) > 0 {
		reqs = `install_requires=["` + strings.Join(p.Requires, `", "`) + `"], `
	}
	clienttest.WriteFile(t, filepath.Join(dir, "setup.py"), `from setuptools import setup
setup(name="`+p.Name+`", version="`+p.Version+`", description="`+p.Name+` for the depot tests",
      package_dir={"": "src"}, packages=["`+p.Module+`"], `+reqs+`python_requires=">=3.8")
`)
	clienttest.WriteFile(t, filepath.Join(dir, "src", p.Module, "__init__.py"), p.Body)
	clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: []string{"HOME=" + clienttest.Home(t)},
		Name: debianPython, Args: []string{"setup.py", "-q", "sdist", "bdist_wheel"}})
	files, err := filepath.Glob(filepath.Join(dir, "dist", "*"))
	if err != nil || len(files) != 2 {
		t.Fatalf("dists of %s: %v %v", p.Name, files, err)
	}
	sort.Slice(files, func(i, j int) bool { return strings.HasSuffix(files[i], ".tar.gz") })
	return files
}

func sha256File(t *testing.T, path string) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), int64(len(b))
}

// twine runs twine upload against repo with the given credentials.
func twine(t *testing.T, e *origintest.Env, repo, user, pass string, extra []string, files ...string) (string, error) {
	t.Helper()
	args := append([]string{"upload", "--non-interactive", "--disable-progress-bar",
		"--repository-url", e.URL + "/pypi/" + repo + "/", "-u", user, "-p", pass}, extra...)
	return clienttest.TryRun(clienttest.Cmd{Env: []string{"HOME=" + clienttest.Home(t)}, Name: "twine", Args: append(args, files...)})
}

// pipEnv keeps pip away from any index but ours and from its self-check
// against PyPI.
func pipEnv(t *testing.T) []string {
	return []string{"HOME=" + clienttest.Home(t), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1",
		"PIP_CONFIG_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1"}
}

// venv makes a virtual environment with python and returns its bin dir.
func venv(t *testing.T, python string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "venv")
	clienttest.Run(t, clienttest.Cmd{Env: pipEnv(t), Name: python, Args: append([]string{"-m", "venv"}, append(args, dir)...)})
	return filepath.Join(dir, "bin")
}
