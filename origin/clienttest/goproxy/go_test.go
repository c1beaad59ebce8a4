package goproxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

func start(t *testing.T) *origintest.Env { return origintest.Start(t, origintest.Options{TLS: true}) }

// moduleZip is the zip of module path at version whose package greets
// with word.
func moduleZip(t *testing.T, path, version, word string) []byte {
	t.Helper()
	dir := t.TempDir()
	clienttest.WriteFile(t, filepath.Join(dir, "go.mod"), "module "+path+"\n\ngo 1.21\n")
	clienttest.WriteFile(t, filepath.Join(dir, "greet.go"), "package greet\n\n// Word is what this version says.\nfunc Word() string { return \""+word+"\" }\n")
	var b bytes.Buffer
	if err := modzip.CreateFromDir(&b, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoModules: a private go repository over HTTPS. Module versions
// (an upper-case path, so case-encoded on the wire) are uploaded as zips;
// a version cannot be uploaded twice, a zip that is not a module's is
// refused; the real go command lists the versions, downloads one with
// its checksums and builds a consumer module that needs the newest, with
// credentials in GOPROXY and GONOSUMDB; without credentials it is told
// 401.
func TestGoModules(t *testing.T) {
	bins := clienttest.RequireClients(t, "go")
	clienttest.Targets(t, start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("gomods", "go", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		basic := alice.Basic()
		const mod = "example.com/Greet"
		for _, v := range []struct{ version, word string }{{"v1.0.0", "hello"}, {"v1.1.0", "bonjour"}} {
			r := e.Do("PUT", "/go/gomods/upload", basic, moduleZip(t, mod, v.version, v.word)).Want(201)
			var got map[string]string
			r.JSON(&got)
			if got["module"] != mod || got["version"] != v.version {
				t.Fatalf("upload answered %v", got)
			}
		}
		e.Do("PUT", "/go/gomods/upload", basic, moduleZip(t, mod, "v1.0.0", "changed")).Want(409)
		e.Do("PUT", "/go/gomods/upload", basic, []byte("not a zip")).Want(400)
		for _, bad := range []map[string]string{
			{mod + "@v1.3.0/go.mod": "module example.com/other\n", mod + "@v1.3.0/greet.go": "package greet\n"}, // go.mod names another module
			{mod + "@v1.4.0/go.mod": "module " + mod + "\n", mod + "@v1.4.0/../../evil.go": "package evil\n"},   // a path out of the module
			{mod + "@v1.5.0/go.mod": "module " + mod + "\n", "example.com/Other@v1.5.0/x.go": "package x\n"},    // another module's file
			{"example.com/Greet@1.0/go.mod": "module " + mod + "\n"},                                            // not a version
			{mod + "@v1.6.0/greet.go": "package greet\n"},                                                       // no go.mod
		} {
			e.Do("PUT", "/go/gomods/upload", basic, formattest.Zip(t, bad)).Want(400)
		}
		e.Do("PUT", "/go/gomods/upload", "", moduleZip(t, mod, "v1.2.0", "x")).Want(401)

		home, work := clienttest.Home(t), t.TempDir()
		gocache, _ := exec.Command(bins["go"], "env", "GOCACHE").Output()
		proxy := strings.Replace(e.URL, "https://", "https://"+alice.Name+":"+alice.Token+"@", 1) + "/go/gomods"
		env := func(proxy string) []string {
			modcache := filepath.Join(work, "modcache")
			if !strings.Contains(proxy, "@") {
				modcache = filepath.Join(work, "anonymous-modcache") // nothing there yet
			}
			return []string{"HOME=" + home, "GOPATH=" + filepath.Join(home, "go"), "GOMODCACHE=" + modcache,
				"GOCACHE=" + strings.TrimSpace(string(gocache)), "GOPROXY=" + proxy, "GONOSUMDB=example.com", "GOFLAGS=-mod=mod -modcacherw",
				"GOTOOLCHAIN=local", "SSL_CERT_FILE=" + e.CertFile}
		}
		gocmd := func(dir, proxy string, args ...string) (string, error) {
			return clienttest.TryRun(clienttest.Cmd{Dir: dir, Env: env(proxy), Name: bins["go"], Args: args})
		}
		out, err := gocmd(work, proxy, "list", "-m", "-versions", mod)
		if err != nil || strings.TrimSpace(out) != mod+" v1.0.0 v1.1.0" {
			t.Fatalf("go list -m -versions: %v\n%s", err, out)
		}
		out, err = gocmd(work, proxy, "mod", "download", "-json", mod+"@v1.0.0")
		var dl struct{ Version, Zip, GoMod, Sum string }
		if err != nil || json.Unmarshal([]byte(out), &dl) != nil || dl.Version != "v1.0.0" || !strings.HasPrefix(dl.Sum, "h1:") {
			t.Fatalf("go mod download: %v\n%s", err, out)
		}
		if _, err := os.Stat(dl.Zip); err != nil {
			t.Fatalf("downloaded zip: %v", err)
		}

		app := filepath.Join(work, "app")
		clienttest.WriteFile(t, filepath.Join(app, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire "+mod+" v1.1.0\n")
		clienttest.WriteFile(t, filepath.Join(app, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\tgreet \""+mod+"\"\n)\n\nfunc main() { fmt.Println(greet.Word()) }\n")
		if out, err := gocmd(app, proxy, "build", "-o", "app", "."); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		if out, err := exec.Command(filepath.Join(app, "app")).Output(); err != nil || strings.TrimSpace(string(out)) != "bonjour" {
			t.Fatalf("the consumer says %q (%v), want the newest version's word", out, err)
		}
		if sum, _ := os.ReadFile(filepath.Join(app, "go.sum")); !strings.Contains(string(sum), mod+" v1.1.0 h1:") {
			t.Fatalf("go.sum:\n%s", sum)
		}

		anonymous := e.URL + "/go/gomods"
		out, err = gocmd(t.TempDir(), anonymous, "mod", "download", mod+"@v1.0.0")
		if err == nil || !strings.Contains(out, "401") {
			t.Fatalf("without credentials: %v\n%s", err, out)
		}
		if r := e.Do("GET", "/go/gomods/example.com/!greet/@v/list", basic, nil).Want(http.StatusOK); string(r.Body) != "v1.0.0\nv1.1.0\n" {
			t.Fatalf("list: %q", r.Body)
		}
		e.Do("GET", "/go/gomods/example.com/@v/list", basic, nil).Want(http.StatusNotFound)
		e.Do("GET", "/go/gomods/sumdb/sum.golang.org/supported", basic, nil).Want(http.StatusNotFound)

		// Deleting a version through the REST API: its artifact is the
		// module zip, and the go.mod goes with it (a version is the two
		// together): the go command is offered only what it can install.
		for _, v := range []string{"v1.2.0", "v1.3.0"} {
			e.Do("PUT", "/go/gomods/upload", basic, moduleZip(t, mod, v, "hallo")).Want(201)
		}
		var versions struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/"+url.PathEscape(mod)+"/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&versions)
		for _, v := range versions.Versions {
			var a struct{ Path string }
			e.Do("GET", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(200).JSON(&a)
			if !strings.HasSuffix(a.Path, ".zip") {
				t.Errorf("version %s names %s, not its module zip", v.Version, a.Path)
			}
			if v.Version == "v1.3.0" || v.Version == "v1.2.0" {
				e.Do("DELETE", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(204)
			}
		}
		e.Do("GET", "/go/gomods/example.com/!greet/@v/v1.3.0.mod", basic, nil).Want(http.StatusNotFound)
		out, err = gocmd(work, proxy, "list", "-m", "-versions", mod)
		if err != nil || strings.TrimSpace(out) != mod+" v1.0.0 v1.1.0" {
			t.Fatalf("go list -m -versions after deleting two versions: %v\n%s", err, out)
		}
		latest := filepath.Join(work, "latest")
		clienttest.WriteFile(t, filepath.Join(latest, "go.mod"), "module example.com/latest\n\ngo 1.21\n")
		if out, err := gocmd(latest, proxy, "get", mod+"@latest"); err != nil || !strings.Contains(out, mod+" v1.1.0") {
			t.Fatalf("go get @latest after the deletes: %v\n%s", err, out)
		}
	})
}
