package composer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRESTDelete: the newer of two versions deleted through the REST API
// leaves the package's p2 file, whose date moves forward even within the
// second of the upload before; its zip is no longer served; composer,
// whose cache saw the version, and composer in a fresh project install
// the older one. The last version deleted, the package leaves
// packages.json and its p2 file is gone.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "composer", "php")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("php", "composer", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		cached := newProject(t, bins, e.URL+"/composer/php", alice)
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.0.0", "hello 1.0.0")).Want(201)
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.1.0", "hello 1.1.0")).Want(201)
		cached.update()
		if v, says := cached.installed(); v != "1.1.0" || says != "hello 1.1.0" {
			t.Fatalf("before the delete composer installed %s, which says %q", v, says)
		}

		const p2 = "/composer/php/p2/acme/greeter.json"
		p2Doc := func() (versions []string, modified string) {
			t.Helper()
			r := e.Do("GET", p2, alice.Basic(), nil).Want(200)
			var doc struct {
				Packages map[string][]struct{ Version string }
			}
			if err := json.Unmarshal(r.Body, &doc); err != nil {
				t.Fatalf("%s: %v\n%s", p2, err, r.Body)
			}
			for _, v := range doc.Packages["acme/greeter"] {
				versions = append(versions, v.Version)
			}
			slices.Sort(versions)
			return versions, r.Header.Get("Last-Modified")
		}
		// Uploaded again to date the document just before the delete.
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.0.1", "hello 1.0.1")).Want(201)
		before, beforeDate := p2Doc()
		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, url.PathEscape("acme/greeter"), "1.1.0"), alice.Basic(), nil).Want(204)
		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, url.PathEscape("acme/greeter"), "1.0.1"), alice.Basic(), nil).Want(204)
		after, afterDate := p2Doc()
		if !slices.Equal(before, []string{"1.0.0", "1.0.1", "1.1.0"}) || !slices.Equal(after, []string{"1.0.0"}) {
			t.Fatalf("p2 lists %v before the deletes and %v after", before, after)
		}
		t0, err0 := http.ParseTime(beforeDate)
		t1, err1 := http.ParseTime(afterDate)
		if err0 != nil || err1 != nil || !t1.After(t0) {
			t.Fatalf("p2's Last-Modified is %q before the deletes and %q after: want it later", beforeDate, afterDate)
		}
		e.Do("GET", "/composer/php/files/acme/greeter/1.1.0/acme-greeter-1.1.0.zip", alice.Basic(), nil).Want(404)

		cached.update()
		if v, says := cached.installed(); v != "1.0.0" || says != "hello 1.0.0" {
			t.Fatalf("after the delete composer (its cache saw 1.1.0) installed %s, which says %q", v, says)
		}
		fresh := newProject(t, bins, e.URL+"/composer/php", alice)
		fresh.update()
		if v, says := fresh.installed(); v != "1.0.0" || says != "hello 1.0.0" {
			t.Fatalf("after the delete composer in a fresh project installed %s, which says %q", v, says)
		}

		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, url.PathEscape("acme/greeter"), "1.0.0"), alice.Basic(), nil).Want(204)
		e.Do("GET", p2, alice.Basic(), nil).Want(404)
		var root struct {
			Available []string `json:"available-packages"`
		}
		e.Do("GET", "/composer/php/packages.json", alice.Basic(), nil).Want(200).JSON(&root)
		if len(root.Available) != 0 {
			t.Fatalf("packages.json lists %v after the last version went", root.Available)
		}
	})
}
