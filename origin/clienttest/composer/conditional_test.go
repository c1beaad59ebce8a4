package composer_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// recorder is a reverse proxy in front of the registry under test (the
// origin, or an edge) that notes the status of each answer the registry
// sent. A client pointed at it is answered as it would be directly: the
// Host header goes through, so absolute URLs name the recorder.
type recorder struct {
	URL  string
	mu   sync.Mutex
	seen map[string]map[int]int // path -> status -> answers
}

func record(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{seen: map[string]map[int]int{}}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			p := resp.Request.URL.Path
			if rec.seen[p] == nil {
				rec.seen[p] = map[int]int{}
			}
			rec.seen[p][resp.StatusCode]++
			return nil
		},
	})
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// take returns the statuses answered for each path since the last take.
func (r *recorder) take() map[string]map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	r.seen = map[string]map[int]int{}
	return seen
}

// project is a composer project that requires acme/greeter ^1.0 from
// one repository only, with http-basic credentials for its host, and a
// home and a cache of its own, kept from one run to the next.
type project struct {
	t         *testing.T
	bins      map[string]string
	dir, home string
}

func newProject(t *testing.T, bins map[string]string, repoURL string, u clienttest.User) *project {
	t.Helper()
	p := &project{t: t, bins: bins, dir: t.TempDir(), home: clienttest.Home(t)}
	host, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	clienttest.WriteFile(t, filepath.Join(p.dir, "composer.json"), `{"name":"acme/app","require":{"acme/greeter":"^1.0"},
  "repositories":[{"type":"composer","url":"`+repoURL+`"},{"packagist.org":false}],"config":{"secure-http":false}}`)
	clienttest.WriteFile(t, filepath.Join(p.dir, "auth.json"), `{"http-basic":{"`+host.Host+`":{"username":"`+u.Name+`","password":"`+u.Token+`"}}}`)
	return p
}

// update resolves the requirement again, reading the repository's
// metadata (revalidating what the cache holds), and installs.
func (p *project) update() string {
	p.t.Helper()
	return clienttest.Run(p.t, clienttest.Cmd{Dir: p.dir, Name: p.bins["composer"], Args: []string{"update", "--no-interaction", "--no-progress"},
		Env: []string{"HOME=" + p.home, "COMPOSER_HOME=" + filepath.Join(p.home, "composer"), "COMPOSER_CACHE_DIR=" + filepath.Join(p.home, "cache"),
			"COMPOSER_NO_AUDIT=1", "COMPOSER_DISABLE_NETWORK=0"}})
}

// installed is the version of acme/greeter composer.lock holds and what
// the installed code says.
func (p *project) installed() (version, says string) {
	p.t.Helper()
	raw, err := os.ReadFile(filepath.Join(p.dir, "composer.lock"))
	if err != nil {
		p.t.Fatal(err)
	}
	var lock struct {
		Packages []struct{ Name, Version string }
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		p.t.Fatalf("composer.lock: %v\n%s", err, raw)
	}
	for _, pkg := range lock.Packages {
		if pkg.Name == "acme/greeter" {
			version = pkg.Version
		}
	}
	out := clienttest.Run(p.t, clienttest.Cmd{Dir: p.dir, Name: p.bins["php"], Args: []string{"-r",
		`require "vendor/autoload.php"; echo Acme\Greeter\Greeter::hello();`}})
	return version, strings.TrimSpace(out)
}

// TestConditionalMetadata: composer revalidates the metadata it has
// cached with If-Modified-Since and the Last-Modified it was given (it
// never sends If-None-Match): run again with its cache, it is answered
// 304 for the package's p2 file and for packages.json, so it downloads
// neither, and still installs the newest version. Once that version is
// deleted through the REST API, the p2 file's date has moved forward,
// not back to the older upload's: the next run is answered the document,
// without the deleted version, and installs the older one, and the run
// after it is answered 304 again; a new version is seen as well. Counted
// from what the server answered, origin or edge.
func TestConditionalMetadata(t *testing.T) {
	bins := clienttest.RequireClients(t, "composer", "php")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("php", "composer", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.0.0", "hello 1.0.0")).Want(201)
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.1.0", "hello 1.1.0")).Want(201)
		rec := record(t, e.URL)
		p := newProject(t, bins, rec.URL+"/composer/php", alice)
		const p2, root = "/composer/php/p2/acme/greeter.json", "/composer/php/packages.json"
		run := func(what, wantVersion string, want map[string]int) {
			t.Helper()
			out := p.update()
			seen := rec.take()
			for path, status := range want {
				if got := seen[path]; got[status] == 0 || len(got) != 1 {
					t.Fatalf("%s: the server answered %s %v, want only %d\ncomposer:\n%s", what, path, got, status, out)
				}
			}
			if v, says := p.installed(); v != wantVersion || says != "hello "+wantVersion {
				t.Fatalf("%s: composer installed %s, which says %q; want %s\n%s", what, v, says, wantVersion, out)
			}
		}
		run("the first run", "1.1.0", map[string]int{p2: 200, root: 200})
		run("a run with the cache", "1.1.0", map[string]int{p2: 304, root: 304})

		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, url.PathEscape("acme/greeter"), "1.1.0"), alice.Basic(), nil).Want(204)
		// The names did not change: packages.json keeps its date.
		run("the run after the delete", "1.0.0", map[string]int{p2: 200, root: 304})
		run("a run with the cache after the delete", "1.0.0", map[string]int{p2: 304, root: 304})

		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.2.0", "hello 1.2.0")).Want(201)
		run("the run after another upload", "1.2.0", map[string]int{p2: 200, root: 304})
	})
}
