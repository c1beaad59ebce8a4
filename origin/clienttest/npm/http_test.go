package npm

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// tgz builds a package tarball from name -> content.
// publishDoc is the document npm PUTs to publish name@version with data
// as its tarball; edit changes it before it is encoded.
func publishDoc(t *testing.T, name, version string, data []byte, edit func(doc, ver, dist map[string]any)) []byte {
	t.Helper()
	s1 := sha1.Sum(data)
	s512 := sha512.Sum512(data)
	dist := map[string]any{"shasum": hex.EncodeToString(s1[:]),
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "tarball": "http://elsewhere/x.tgz"}
	ver := map[string]any{"name": name, "version": version, "_id": name + "@" + version, "dist": dist}
	doc := map[string]any{"_id": name, "name": name, "dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: ver},
		"_attachments": map[string]any{name + "-" + version + ".tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(data), "length": len(data)}}}
	if edit != nil {
		edit(doc, ver, dist)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func goodTgz(t *testing.T) []byte {
	return formattest.Tgz(t, map[string]string{"package/package.json": `{"name":"x"}`, "package/index.js": "1"})
}

// wantNPMError checks npm's native error body.
func wantNPMError(t *testing.T, r *origintest.Response, status int) {
	t.Helper()
	r.Want(status)
	var body struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Error == nil || *body.Error == "" {
		t.Fatalf("status %d: body is not {\"error\": msg}: %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q", ct)
	}
}

// TestHTTPErrors: bad publishes get a clear 4xx in npm's shape and leave
// nothing behind.
func TestHTTPErrors(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("js", "npm", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "read", "write", "delete")
	e.Do("PUT", "/npm/js/demo", alice.Token, publishDoc(t, "demo", "1.0.0", goodTgz(t), nil)).Want(201)
	n0, size0 := e.RepoCounters(repoID)

	traversal := formattest.Tgz(t, map[string]string{"package/package.json": "{}", "package/../../evil": "x"})
	noManifest := formattest.Tgz(t, map[string]string{"package/index.js": "1"})
	cases := []struct {
		name, path string
		body       []byte
		status     int
		msg        string
	}{
		{"malformed JSON", "/npm/js/demo2", []byte(`{"name":`), 400, "invalid package document"},
		{"bad base64", "/npm/js/demo2", []byte(`{"name":"demo2","versions":{"1.0.0":{}},"_attachments":{"demo2-1.0.0.tgz":{"data":"!!"}}}`), 400, "invalid package document"},
		{"upper-case name", "/npm/js/Demo2", publishDoc(t, "Demo2", "1.0.0", goodTgz(t), nil), 400, "invalid package name"},
		{"name mismatch", "/npm/js/demo2", publishDoc(t, "demo3", "1.0.0", goodTgz(t), nil), 400, "document names"},
		{"bad version", "/npm/js/demo2", publishDoc(t, "demo2", "1.0", goodTgz(t), nil), 400, "not valid semver"},
		{"integrity mismatch", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(_, _, d map[string]any) {
			d["integrity"] = "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
		}), 400, "integrity"},
		{"shasum mismatch", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(_, _, d map[string]any) {
			d["shasum"] = strings.Repeat("0", 40)
		}), 400, "shasum"},
		{"no checksums", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(_, _, d map[string]any) {
			delete(d, "shasum")
			delete(d, "integrity")
		}), 400, "integrity or shasum"},
		{"length mismatch", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(doc, _, _ map[string]any) {
			doc["_attachments"].(map[string]any)["demo2-1.0.0.tgz"].(map[string]any)["length"] = 1
		}), 400, "length"},
		{"wrong attachment", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(doc, _, _ map[string]any) {
			a := doc["_attachments"].(map[string]any)
			a["../evil.tgz"] = a["demo2-1.0.0.tgz"]
			delete(a, "demo2-1.0.0.tgz")
		}), 400, "attachment"},
		{"not gzip", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", []byte("plain text, not a tarball"), nil), 400, "gzip"},
		{"tarball traversal", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", traversal, nil), 400, "climbs out"},
		{"tarball without package.json", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", noManifest, nil), 400, "package.json"},
		{"semver dist-tag", "/npm/js/demo2", publishDoc(t, "demo2", "1.0.0", goodTgz(t), func(doc, _, _ map[string]any) {
			doc["dist-tags"] = map[string]string{"2.0.0": "1.0.0"}
		}), 400, "semver"},
		{"republish", "/npm/js/demo", publishDoc(t, "demo", "1.0.0", goodTgz(t), nil), 409, "cannot publish over"},
		{"tag of an unknown version", "/npm/js/-/package/demo/dist-tags/beta", []byte(`"9.9.9"`), 404, "version not found"},
		{"tag body not a string", "/npm/js/-/package/demo/dist-tags/beta", []byte(`{}`), 400, "JSON string"},
		{"remove latest", "/npm/js/-/package/demo/dist-tags/latest", nil, 400, "latest"},
		{"unknown path", "/npm/js/demo/-/x/y/z", nil, 404, "not an npm registry path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := "PUT"
			if c.body == nil {
				method = "DELETE"
			}
			r := e.For(t).Do(method, c.path, alice.Token, c.body)
			wantNPMError(t, r, c.status)
			if !strings.Contains(string(r.Body), c.msg) {
				t.Errorf("error %s does not mention %q", r.Body, c.msg)
			}
			if n, size := e.For(t).RepoCounters(repoID); n != n0 || size != size0 {
				t.Errorf("repository changed: %d/%d -> %d/%d", n0, size0, n, size)
			}
		})
	}
	e.Do("GET", "/npm/js/demo2", alice.Token, nil).Want(404)
}

// TestTooLarge: a tarball past the server's upload limit is refused with
// 413 and nothing is stored.
func TestTooLarge(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.MaxUploadBytes = 1 << 10
	}})
	repoID := e.CreateRepo("js", "npm", false)
	big := append(goodTgz(t), bytes.Repeat([]byte{0}, 2<<10)...) // past the limit whatever it holds
	wantNPMError(t, e.Do("PUT", "/npm/js/big", e.Admin, publishDoc(t, "big", "1.0.0", big, nil)), http.StatusRequestEntityTooLarge)
	if n, _ := e.RepoCounters(repoID); n != 0 {
		t.Errorf("artifact_count %d", n)
	}
}

// TestAuthorization: anonymous 401 with a challenge, 403 without the
// right permission, 404 in npm's shape for a repository of another format.
func TestAuthorization(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("js", "npm", false)
	pubID := e.CreateRepo("pub", "npm", true)
	e.CreateRepo("files", "generic", false)
	alice := clienttest.NewUser(e, "alice")
	reader := clienttest.NewUser(e, "reader")
	writer := clienttest.NewUser(e, "writer")
	e.Grant(repoID, alice.ID, false, "read", "write", "delete")
	e.Grant(pubID, alice.ID, false, "read", "write", "delete")
	e.Grant(repoID, reader.ID, false, "read")
	e.Grant(repoID, writer.ID, false, "write")
	e.Do("PUT", "/npm/js/demo", alice.Token, publishDoc(t, "demo", "1.0.0", goodTgz(t), nil)).Want(201)
	e.Do("PUT", "/npm/pub/demo", alice.Token, publishDoc(t, "demo", "1.0.0", goodTgz(t), nil)).Want(201)

	anon := []struct{ method, path string }{
		{"GET", "/npm/js/demo"}, {"GET", "/npm/js/demo/-/demo-1.0.0.tgz"}, {"PUT", "/npm/js/demo"},
		{"GET", "/npm/js/-/whoami"}, {"GET", "/npm/pub/-/whoami"}, {"PUT", "/npm/pub/demo"},
		{"GET", "/npm/nosuchrepo/demo"},
	}
	for _, c := range anon {
		r := e.Do(c.method, c.path, "", publishDoc(t, "demo", "1.0.1", goodTgz(t), nil))
		wantNPMError(t, r, 401)
		if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="Depot"` {
			t.Errorf("%s %s: WWW-Authenticate %q", c.method, c.path, got)
		}
	}
	wantNPMError(t, e.Do("GET", "/npm/js/demo", "Bearer dpt_not_a_token", nil), 401)
	e.Do("GET", "/npm/pub/demo", "", nil).Want(200)
	e.Do("GET", "/npm/pub/demo/-/demo-1.0.0.tgz", "", nil).Want(200)

	// reader may read, nothing else.
	e.Do("GET", "/npm/js/demo", reader.Token, nil).Want(200)
	wantNPMError(t, e.Do("PUT", "/npm/js/demo", reader.Token, publishDoc(t, "demo", "1.0.1", goodTgz(t), nil)), 403)
	wantNPMError(t, e.Do("PUT", "/npm/js/-/package/demo/dist-tags/beta", reader.Token, `"1.0.0"`), 403)
	wantNPMError(t, e.Do("DELETE", "/npm/js/demo/-rev/1-0", reader.Token, nil), 403)
	// writer publishes and tags, but may not unpublish.
	e.Do("PUT", "/npm/js/demo", writer.Token, publishDoc(t, "demo", "1.0.1", goodTgz(t), nil)).Want(201)
	e.Do("PUT", "/npm/js/-/package/demo/dist-tags/beta", writer.Token, `"1.0.1"`).Want(201)
	wantNPMError(t, e.Do("DELETE", "/npm/js/demo/-rev/1-0", writer.Token, nil), 403)
	wantNPMError(t, e.Do("DELETE", "/npm/js/demo/-/demo-1.0.1.tgz/-rev/1-0", writer.Token, nil), 403)
	wantNPMError(t, e.Do("PUT", "/npm/js/demo/-rev/1-0", writer.Token, `{"versions":{}}`), 403)
	if n, _ := e.RepoCounters(repoID); n != 2 {
		t.Errorf("artifact_count %d, want 2", n)
	}
	// A repository of another format is not an npm registry.
	wantNPMError(t, e.Do("GET", "/npm/files/demo", alice.Token, nil), 404)
	wantNPMError(t, e.Do("GET", "/npm/files/demo", e.Admin, nil), 404)
}

// TestPackumentShapes checks the documents over HTTP: full and
// abbreviated packuments, the scoped name escaped as npm sends it, one
// version, dist-tags, conditional GETs and HEAD on a tarball.
func TestPackumentShapes(t *testing.T) {
	e := clienttest.Start(t)
	e.CreateRepo("js", "npm", true)
	data := goodTgz(t)
	e.Do("PUT", "/npm/js/@acme%2fdemo", e.Admin, publishDoc(t, "@acme/demo", "1.0.0", data, func(doc, ver, _ map[string]any) {
		doc["readme"] = "# demo"
		doc["description"] = "the demo"
		ver["scripts"] = map[string]string{"postinstall": "true"}
		ver["dependencies"] = map[string]string{"left-pad": "^1.0.0"}
	})).Want(201)

	var full map[string]any
	r := e.Do("GET", "/npm/js/@acme%2fdemo", "", nil).Want(200).JSON(&full)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("full Content-Type %q", ct)
	}
	times, _ := full["time"].(map[string]any)
	if full["name"] != "@acme/demo" || full["readme"] != "# demo" || full["description"] != "the demo" || full["_rev"] == nil ||
		times["created"] == nil || times["modified"] == nil || times["1.0.0"] == nil {
		t.Errorf("full packument: %s", r.Body)
	}
	v := full["versions"].(map[string]any)["1.0.0"].(map[string]any)
	dist := v["dist"].(map[string]any)
	if dist["tarball"] != e.URL+"/npm/js/@acme/demo/-/demo-1.0.0.tgz" {
		t.Errorf("tarball %v", dist["tarball"])
	}
	s512 := sha512.Sum512(data)
	if dist["integrity"] != "sha512-"+base64.StdEncoding.EncodeToString(s512[:]) {
		t.Errorf("integrity %v", dist["integrity"])
	}
	etag := r.Header.Get("ETag")
	e.DoHeader("GET", "/npm/js/@acme/demo", "", nil, map[string]string{"If-None-Match": etag}).Want(304)

	var abbr map[string]any
	r = e.DoHeader("GET", "/npm/js/@acme%2fdemo", "", nil, map[string]string{
		"Accept": "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"}).Want(200).JSON(&abbr)
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.npm.install-v1+json" {
		t.Errorf("abbreviated Content-Type %q", ct)
	}
	av := abbr["versions"].(map[string]any)["1.0.0"].(map[string]any)
	if abbr["readme"] != nil || abbr["time"] != nil || abbr["modified"] == nil || av["hasInstallScript"] != true ||
		av["scripts"] != nil || av["dependencies"] == nil || av["dist"] == nil {
		t.Errorf("abbreviated packument: %s", r.Body)
	}
	var one map[string]any
	e.Do("GET", "/npm/js/@acme%2fdemo/latest", "", nil).Want(200).JSON(&one)
	if one["version"] != "1.0.0" || one["_id"] != "@acme/demo@1.0.0" {
		t.Errorf("version document: %v", one)
	}
	e.Do("GET", "/npm/js/@acme%2fdemo/2.0.0", "", nil).Want(404)
	var tags map[string]string
	e.Do("GET", "/npm/js/-/package/@acme%2fdemo/dist-tags", "", nil).Want(200).JSON(&tags)
	if len(tags) != 1 || tags["latest"] != "1.0.0" {
		t.Errorf("dist-tags %v", tags)
	}
	r = e.Do("HEAD", "/npm/js/@acme/demo/-/demo-1.0.0.tgz", "", nil).Want(200)
	if r.Header.Get("X-Checksum-Sha1") == "" {
		t.Errorf("tarball HEAD headers %v", r.Header)
	}
	if got := e.Do("GET", "/npm/js/@acme/demo/-/demo-1.0.0.tgz", "", nil).Want(200).Body; !bytes.Equal(got, data) {
		t.Errorf("tarball bytes differ")
	}
	var search struct {
		Objects []map[string]any `json:"objects"`
		Total   int              `json:"total"`
	}
	e.Do("GET", "/npm/js/-/v1/search?text=demo&size=1&from=5", "", nil).Want(200).JSON(&search)
	if search.Total != 1 || len(search.Objects) != 0 {
		t.Errorf("search past the end: %+v", search)
	}
}
