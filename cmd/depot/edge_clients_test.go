package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestNPMThroughEdge: the real npm client pointed at an edge publishes
// (forwarded to the origin) and then installs the package from the same
// edge at once (read your writes): packument, tarball and its integrity
// from the edge's replica and cache.
func TestNPMThroughEdge(t *testing.T) {
	clienttest.RequireClients(t, "npm", "node")
	es := startEdgeSite(t, "js", "npm")

	home := clienttest.Home(t)
	npmrc := "registry=" + es.e.url + "/npm/js/\n//" + es.listen + "/npm/js/:_authToken=" + es.apiToken + "\n"
	clienttest.WriteFile(t, filepath.Join(home, ".npmrc"), npmrc)
	npm := func(dir string, args ...string) string {
		t.Helper()
		return clienttest.Run(t, clienttest.Cmd{Dir: dir, Name: "npm", Args: args, Env: []string{
			"HOME=" + home, "npm_config_cache=" + filepath.Join(home, "cache"), "npm_config_userconfig=" + filepath.Join(home, ".npmrc"),
			"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false", "npm_config_loglevel=warn", "NO_COLOR=1"}})
	}
	pkg := filepath.Join(t.TempDir(), "pkg")
	clienttest.WriteFile(t, filepath.Join(pkg, "package.json"), `{"name":"edge-demo","version":"1.0.0","main":"index.js"}`)
	clienttest.WriteFile(t, filepath.Join(pkg, "index.js"), `module.exports = "hello from the edge";`)
	npm(pkg, "publish")

	app := filepath.Join(t.TempDir(), "app")
	clienttest.WriteFile(t, filepath.Join(app, "package.json"), `{"name":"consumer","version":"1.0.0","private":true}`)
	clienttest.WriteFile(t, filepath.Join(app, ".npmrc"), npmrc)
	npm(app, "install", "edge-demo@1.0.0")
	out := clienttest.Run(t, clienttest.Cmd{Dir: app, Name: "node", Args: []string{"-e", `console.log(require("edge-demo"))`}})
	if !strings.Contains(out, "hello from the edge") {
		t.Fatalf("the installed package says %q", out)
	}
	// The tarball URL in the lock file points at the edge.
	lock := clienttest.Run(t, clienttest.Cmd{Dir: app, Name: "cat", Args: []string{"package-lock.json"}})
	if !strings.Contains(lock, es.e.url+"/npm/js/") {
		t.Errorf("package-lock.json does not resolve through the edge:\n%s", lock)
	}
}

// TestCraneThroughEdge: an image pushed to the origin with the real crane
// is pulled from an edge with crane (docker's token flow answered by the
// edge): the same manifest, and the layer's bytes from the edge's cache.
func TestCraneThroughEdge(t *testing.T) {
	bins := clienttest.RequireClients(t, "crane")
	es := startEdgeSite(t, "images", "docker")

	work, home := t.TempDir(), clienttest.Home(t)
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
	crane := func(args ...string) (string, error) {
		out, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: args})
		return strings.TrimSpace(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := crane(args...)
		if err != nil {
			t.Fatalf("crane %v: %v\n%s", args, err, out)
		}
		return out
	}
	originHost, edgeHost := strings.TrimPrefix(es.o.url, "http://"), es.listen
	must("auth", "login", originHost, "-u", "admin", "-p", es.apiToken)
	must("auth", "login", edgeHost, "-u", "admin", "-p", es.apiToken)
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := "hello through the edge\n"
	_ = tw.WriteHeader(&tar.Header{Name: "f.txt", Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	clienttest.WriteFile(t, filepath.Join(work, "layer.tar"), layer.String())
	must("append", "--insecure", "-f", "layer.tar", "-t", originHost+"/images/app:1.0")
	want := must("manifest", "--insecure", originHost+"/images/app:1.0")

	var got string
	waitFor(t, 20*time.Second, "the image to reach the edge", func() bool {
		var err error
		got, err = crane("manifest", "--insecure", edgeHost+"/images/app:1.0")
		return err == nil
	})
	if got != want {
		t.Fatalf("manifest at the edge:\n%s\nat the origin:\n%s", got, want)
	}
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal([]byte(got), &m); err != nil || len(m.Layers) != 1 {
		t.Fatalf("manifest: %v %s", err, got)
	}
	blob := must("blob", "--insecure", edgeHost+"/images/app@"+m.Layers[0].Digest)
	zr, err := gzip.NewReader(strings.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(tr); string(b) != content {
		t.Fatalf("the layer from the edge holds %q", b)
	}
}

// TestPipThroughEdge: the real twine uploads a wheel through an edge
// (forwarded), and the real pip installs it from the same edge's simple
// index at once.
func TestPipThroughEdge(t *testing.T) {
	clienttest.RequireClients(t, "twine", "python3")
	es := startEdgeSite(t, "py", "pypi")

	home := clienttest.Home(t)
	proj := filepath.Join(t.TempDir(), "edgepkg")
	clienttest.WriteFile(t, filepath.Join(proj, "setup.py"), `from setuptools import setup
setup(name="edge_pkg", version="1.0.0", package_dir={"": "src"}, packages=["edge_pkg"])
`)
	clienttest.WriteFile(t, filepath.Join(proj, "src", "edge_pkg", "__init__.py"), "def hello():\n    return 'hello from the edge'\n")
	clienttest.Run(t, clienttest.Cmd{Dir: proj, Env: []string{"HOME=" + home}, Name: "/usr/bin/python3", Args: []string{"setup.py", "-q", "bdist_wheel"}})
	wheels, _ := filepath.Glob(filepath.Join(proj, "dist", "*.whl"))
	if len(wheels) != 1 {
		t.Fatalf("wheels: %v", wheels)
	}
	clienttest.Run(t, clienttest.Cmd{Env: []string{"HOME=" + home}, Name: "twine", Args: []string{"upload", "--non-interactive",
		"--disable-progress-bar", "--repository-url", es.e.url + "/pypi/py/", "-u", "admin", "-p", es.apiToken, wheels[0]}})

	pipEnv := []string{"HOME=" + home, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_CONFIG_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1"}
	venv := filepath.Join(t.TempDir(), "venv")
	clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: "python3", Args: []string{"-m", "venv", venv}})
	index := "http://admin:" + es.apiToken + "@" + es.listen + "/pypi/py/simple/"
	out := clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "pip"), Args: []string{
		"install", "--no-cache-dir", "--index-url", index, "edge_pkg==1.0.0"}})
	if !strings.Contains(out, "Successfully installed") {
		t.Fatalf("pip install through the edge:\n%s", out)
	}
	got := clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "python"), Args: []string{"-c", "import edge_pkg; print(edge_pkg.hello())"}})
	if !strings.Contains(got, "hello from the edge") {
		t.Fatalf("the installed package says %q", got)
	}
}
