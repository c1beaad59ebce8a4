package pypi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRESTDelete: files deleted through the REST API leave the simple
// index, HTML and JSON. 1.1 has a wheel and an sdist: with its wheel
// deleted the index offers 1.1 as the sdist alone, and pip, whose cache saw
// the wheel, still lists 1.1 but takes only 1.0 as a wheel; with the
// sdist deleted too pip and uv install 1.0 when no version is asked for,
// and asking for 1.1 is their "no such version" error. The deleted files
// and the wheel's METADATA are no longer served.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "twine", "python3", "uv", debianPython)
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("py", "pypi", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		publish := func(files ...string) {
			t.Helper()
			if out, err := twine(t, e, "py", alice.Name, alice.Token, nil, files...); err != nil {
				t.Fatalf("twine upload %v: %v\n%s", files, err, out)
			}
		}
		dists := map[string][]string{} // version: sdist, wheel
		for _, v := range []string{"1.0", "1.1"} {
			dists[v] = build(t, project{Name: "demo-del", Module: "demo_del", Version: v, Body: "VERSION = '" + v + "'\n"})
		}
		sdist, wheel := filepath.Base(dists["1.1"][0]), filepath.Base(dists["1.1"][1])
		old := filepath.Base(dists["1.0"][1])
		publish(dists["1.0"][1])
		// The wheel first, alone in its version, so that the REST API
		// names it; then the sdist.
		publish(dists["1.1"][1])
		wheelID := clienttest.ArtifactOf(e, alice.Basic(), repoID, "demo-del", "1.1")
		var a struct{ Path string }
		if e.Do("GET", "/api/v1/artifacts/"+wheelID, alice.Basic(), nil).Want(200).JSON(&a); !strings.HasSuffix(a.Path, "/"+wheel) {
			t.Fatalf("artifact of 1.1 is %s, want its wheel", a.Path)
		}
		publish(dists["1.1"][0])

		files := regexp.MustCompile(`<a href="[^"]*"[^>]*>([^<]*)</a>`)
		// indexed is what the project page offers: the files of the HTML
		// page, and the files and versions of the JSON one, each sorted.
		indexed := func() (html, json, versions []string) {
			t.Helper()
			page := e.DoHeader("GET", "/pypi/py/simple/demo-del/", alice.Basic(), nil, map[string]string{"Accept": "text/html"}).Want(200).Body
			for _, m := range files.FindAllStringSubmatch(string(page), -1) {
				html = append(html, m[1])
			}
			var doc struct {
				Versions []string
				Files    []struct{ Filename string }
			}
			e.DoHeader("GET", "/pypi/py/simple/demo-del/", alice.Basic(), nil,
				map[string]string{"Accept": "application/vnd.pypi.simple.v1+json"}).Want(200).JSON(&doc)
			for _, f := range doc.Files {
				json = append(json, f.Filename)
			}
			slices.Sort(html)
			slices.Sort(json)
			slices.Sort(doc.Versions)
			return html, json, doc.Versions
		}
		wantIndexed := func(when string, files, versions []string) {
			t.Helper()
			slices.Sort(files)
			if html, json, vs := indexed(); !slices.Equal(html, files) || !slices.Equal(json, files) || !slices.Equal(vs, versions) {
				t.Fatalf("%s the index offers %v (HTML), %v %v (JSON); want %v %v", when, html, json, vs, files, versions)
			}
		}
		wantIndexed("before the deletes", []string{old, wheel, sdist}, []string{"1.0", "1.1"})

		index := "http://" + alice.Name + ":" + alice.Token + "@" + clienttest.HostPort(e) + "/pypi/py/simple/"
		home := clienttest.Home(t)
		// One HOME, so one pip cache and one uv cache for every run.
		env := append(pipEnv(t), "HOME="+home, "PIP_CACHE_DIR="+filepath.Join(home, "pip-cache"),
			"UV_CACHE_DIR="+filepath.Join(home, "uv-cache"), "UV_NO_PROGRESS=1", "UV_PYTHON_DOWNLOADS=never", "NO_COLOR=1")
		cmd := func(name string, args ...string) clienttest.Cmd {
			return clienttest.Cmd{Dir: home, Env: env, Name: name, Args: args}
		}
		// pip caches only what comes over HTTPS or from a trusted host.
		pip := func(bin string, args ...string) clienttest.Cmd {
			return cmd(filepath.Join(bin, "pip"), append(args, "--index-url", index, "--trusted-host", clienttest.HostPort(e))...)
		}
		uv := func(venv string, args ...string) clienttest.Cmd {
			return cmd(bins["uv"], append(append([]string{"pip", "install", "--python", filepath.Join(venv, "bin", "python")}, args...), "--index-url", index)...)
		}
		installed := func(python string) string {
			t.Helper()
			return strings.TrimSpace(clienttest.Run(t, cmd(python, "-c", "import demo_del; print(demo_del.VERSION)")))
		}

		// pip's and uv's caches hold what they fetched to install 1.1.
		before := venv(t, "python3")
		clienttest.Run(t, pip(before, "install", "demo-del"))
		if v := installed(filepath.Join(before, "python")); v != "1.1" {
			t.Fatalf("before the deletes pip installed demo-del %s, want 1.1", v)
		}
		uvBefore := filepath.Join(t.TempDir(), "venv")
		clienttest.Run(t, cmd(bins["uv"], "venv", "--python", debianPython, uvBefore))
		clienttest.Run(t, uv(uvBefore, "demo-del"))
		if v := installed(filepath.Join(uvBefore, "bin", "python")); v != "1.1" {
			t.Fatalf("before the deletes uv installed demo-del %s, want 1.1", v)
		}
		for _, c := range []string{"pip-cache", "uv-cache"} {
			if got, err := os.ReadDir(filepath.Join(home, c)); err != nil || len(got) == 0 {
				t.Fatalf("%s is empty after installing 1.1: %v", c, err)
			}
		}

		// The wheel alone: 1.1 is its sdist now.
		e.Do("DELETE", "/api/v1/artifacts/"+wheelID, alice.Basic(), nil).Want(204)
		wantIndexed("after deleting the wheel of 1.1", []string{old, sdist}, []string{"1.0", "1.1"})
		for _, f := range []string{wheel, wheel + ".metadata"} {
			e.Do("GET", "/pypi/py/files/demo-del/1.1/"+f, alice.Basic(), nil).Want(404)
		}
		e.Do("GET", "/pypi/py/files/demo-del/1.1/"+sdist, alice.Basic(), nil).Want(200)
		// pip would build the sdist to install or download it; reading the
		// index it still finds 1.1, and as a wheel only 1.0.
		if out := clienttest.Run(t, pip(before, "index", "versions", "demo-del")); !strings.Contains(out, "Available versions: 1.1, 1.0") {
			t.Fatalf("pip index versions after deleting the wheel of 1.1:\n%s", out)
		}
		if out := clienttest.Run(t, pip(before, "install", "--dry-run", "--ignore-installed", "--only-binary", ":all:", "demo-del")); !slices.Contains(strings.Split(out, "\n"), "Would install demo-del-1.0") {
			t.Fatalf("pip install --only-binary after deleting the wheel of 1.1:\n%s", out)
		}

		// The rest of 1.1.
		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demo-del", "1.1"), alice.Basic(), nil).Want(204)
		wantIndexed("after deleting 1.1", []string{old}, []string{"1.0"})
		e.Do("GET", "/pypi/py/files/demo-del/1.1/"+sdist, alice.Basic(), nil).Want(404)
		var vs struct{ Versions []struct{ Version string } }
		if e.Do("GET", "/api/v1/packages/demo-del/versions?repository_id="+repoID, alice.Basic(), nil).Want(200).JSON(&vs); len(vs.Versions) != 1 || vs.Versions[0].Version != "1.0" {
			t.Fatalf("versions after deleting 1.1: %+v", vs.Versions)
		}

		after := venv(t, "python3")
		clienttest.Run(t, pip(after, "install", "demo-del"))
		if v := installed(filepath.Join(after, "python")); v != "1.0" {
			t.Fatalf("after the deletes pip installed demo-del %s, want 1.0", v)
		}
		out, err := clienttest.TryRun(pip(after, "install", "demo-del==1.1"))
		if err == nil || !strings.Contains(out, "No matching distribution found for demo-del==1.1") {
			t.Fatalf("pip install of the deleted 1.1: %v\n%s", err, out)
		}
		uvAfter := filepath.Join(t.TempDir(), "venv")
		clienttest.Run(t, cmd(bins["uv"], "venv", "--python", debianPython, uvAfter))
		clienttest.Run(t, uv(uvAfter, "demo-del"))
		if v := installed(filepath.Join(uvAfter, "bin", "python")); v != "1.0" {
			t.Fatalf("after the deletes uv installed demo-del %s, want 1.0", v)
		}
		out, err = clienttest.TryRun(uv(uvAfter, "demo-del==1.1"))
		if err == nil || !strings.Contains(out, "there is no version of demo-del==1.1") {
			t.Fatalf("uv pip install of the deleted 1.1: %v\n%s", err, out)
		}
	})
}
