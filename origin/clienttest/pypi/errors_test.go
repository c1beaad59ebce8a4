package pypi_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestUploadErrors sends malformed uploads: each gets a 400 with a plain
// message saying what is wrong, and none leaves an artifact behind.
func TestUploadErrors(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("py", "pypi", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		url := e.URL + "/pypi/py/"

		sdist := []byte("not really gzip, but sdists are stored as sent")
		good := fieldsFor("Demo_Pkg", "1.0", "sdist", sdist)
		wheelName := "demo_pkg-1.0-py3-none-any.whl"
		wheel := func(files ...[2]string) ([]field, []byte) {
			z := zipOf(t, files...)
			return fieldsFor("demo-pkg", "1.0", "bdist_wheel", z), z
		}
		okMeta := [2]string{"demo_pkg-1.0.dist-info/METADATA", fmt.Sprintf(metadataOf, "Demo_Pkg", "1.0")}

		cases := []struct {
			name     string
			fields   []field
			filename string
			content  []byte
			ct       string // overrides the form's content type
			msg      string
		}{
			{name: "not multipart", fields: good, filename: "Demo_Pkg-1.0.tar.gz", content: sdist, ct: "application/json", msg: "multipart/form-data"},
			{name: "sha256 mismatch", fields: replace(good, "sha256_digest", strings.Repeat("ab", 32)), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "digests"},
			{name: "md5 mismatch", fields: replace(good, "md5_digest", strings.Repeat("ab", 16)), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "digests"},
			{name: "malformed digest", fields: replace(good, "sha256_digest", "xyz"), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "hex digits"},
			{name: "no digest", fields: replace(replace(good, "sha256_digest", ""), "md5_digest", ""), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "digest"},
			{name: "file of another project", fields: good, filename: "other-1.0.tar.gz", content: sdist, msg: "does not belong"},
			{name: "file of another version", fields: good, filename: "Demo_Pkg-2.0.tar.gz", content: sdist, msg: "does not match version"},
			{name: "path traversal", fields: good, filename: "../Demo_Pkg-1.0.tar.gz", content: sdist, msg: "filename"},
			{name: "bidi control", fields: good, filename: "Demo_Pkg-1.0\u202e.tar.gz", content: sdist, msg: "U+202E"},
			{name: "unknown extension", fields: good, filename: "Demo_Pkg-1.0.exe", content: sdist, msg: ".whl, .tar.gz or .zip"},
			{name: "bad wheel name", fields: good, filename: "Demo_Pkg-1.0-py3.whl", content: sdist, msg: "invalid wheel file name"},
			{name: "filetype mismatch", fields: replace(good, "filetype", "bdist_wheel"), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "filetype"},
			{name: "no file", fields: good, msg: "no file"},
			{name: "unsupported action", fields: replace(good, ":action", "remove_pkg"), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: ":action"},
			{name: "invalid name", fields: replace(good, "name", "-bad-"), filename: "-bad--1.0.tar.gz", content: sdist, msg: "project name"},
			{name: "summary too long", fields: replace(good, "summary", strings.Repeat("s", 600)), filename: "Demo_Pkg-1.0.tar.gz", content: sdist, msg: "summary"},
		}
		for _, w := range []struct {
			name  string
			files [][2]string
			msg   string
		}{
			{"wheel not a zip", nil, "not a zip"},
			{"wheel without METADATA", [][2]string{{"demo_pkg/__init__.py", ""}}, "no demo_pkg-1.0.dist-info/METADATA"},
			{"wheel of another project", [][2]string{{"demo_pkg-1.0.dist-info/METADATA", fmt.Sprintf(metadataOf, "other", "1.0")}}, "METADATA says other"},
			{"wheel with zip-slip entry", [][2]string{okMeta, {"../../etc/evil", "x"}}, "climbs out of its directory"},
			{"wheel with bad METADATA", [][2]string{{"demo_pkg-1.0.dist-info/METADATA", "garbage without headers\n"}}, "METADATA"},
		} {
			f, z := wheel(w.files...)
			if w.files == nil {
				z = []byte("PK but not a zip at all")
				f = fieldsFor("demo-pkg", "1.0", "bdist_wheel", z)
			}
			cases = append(cases, struct {
				name     string
				fields   []field
				filename string
				content  []byte
				ct       string
				msg      string
			}{name: w.name, fields: f, filename: wheelName, content: z, msg: w.msg})
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body, h := uploadForm(t, c.fields, c.filename, c.content)
				if c.ct != "" {
					h["Content-Type"] = c.ct
				}
				call(t, "POST", url, alice.Name, alice.Token, h, body).want(t, http.StatusBadRequest, c.msg)
				if n, size := e.For(t).RepoCounters(repoID); n != 0 || size != 0 {
					t.Fatalf("rejected upload left %d artifacts, %d bytes", n, size)
				}
			})
		}

		// Fields after the file (twine sends them first; others may not):
		// the digests are checked once the bytes are stored, and a mismatch
		// still records nothing.
		t.Run("digest after the file", func(t *testing.T) {
			var b bytes.Buffer
			w := multipart.NewWriter(&b)
			fw, _ := w.CreateFormFile("content", "Demo_Pkg-1.0.tar.gz")
			_, _ = fw.Write(sdist)
			for _, f := range replace(good, "sha256_digest", strings.Repeat("0", 64)) {
				_ = w.WriteField(f.k, f.v)
			}
			_ = w.Close()
			call(t, "POST", url, alice.Name, alice.Token, map[string]string{"Content-Type": w.FormDataContentType()}, b.Bytes()).
				want(t, http.StatusBadRequest, "digests")
			if n, _ := e.For(t).RepoCounters(repoID); n != 0 {
				t.Fatalf("rejected upload left %d artifacts", n)
			}
		})

		// A file name is never reused within a project, whatever spelling of
		// the version the form declares.
		t.Run("same file under another version spelling", func(t *testing.T) {
			content := []byte("sdist of 1.0a1")
			name := "Demo_Pkg-1.0a1.tar.gz"
			body, h := uploadForm(t, fieldsFor("Demo_Pkg", "1.0a1", "sdist", content), name, content)
			call(t, "POST", url, alice.Name, alice.Token, h, body).want(t, http.StatusOK, "")
			body, h = uploadForm(t, fieldsFor("Demo_Pkg", "1.0A1", "sdist", content), name, content)
			call(t, "POST", url, alice.Name, alice.Token, h, body).want(t, http.StatusBadRequest, "File already exists")
			if n, _ := e.For(t).RepoCounters(repoID); n != 1 {
				t.Fatalf("%d artifacts, want 1", n)
			}
			var pk struct {
				Versions []struct {
					ArtifactID string `json:"artifact_id"`
				} `json:"versions"`
			}
			e.For(t).Do("GET", "/api/v1/packages/demo-pkg/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&pk)
			for _, v := range pk.Versions { // leave the repository empty for the next cases
				e.For(t).Do("DELETE", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(204)
			}
		})

		// A well-formed wheel is accepted, once; the duplicate is the 400
		// "File already exists" that twine --skip-existing recognises.
		t.Run("duplicate", func(t *testing.T) {
			f, z := wheel(okMeta, [2]string{"demo_pkg/__init__.py", "x = 1\n"})
			body, h := uploadForm(t, f, wheelName, z)
			call(t, "POST", url, alice.Name, alice.Token, h, body).want(t, http.StatusOK, "")
			call(t, "POST", url, alice.Name, alice.Token, h, body).want(t, http.StatusBadRequest, "File already exists")
			if n, size := e.For(t).RepoCounters(repoID); n != 1 || size != int64(len(z)) {
				t.Fatalf("after a duplicate: %d artifacts, %d bytes; want 1, %d", n, size, len(z))
			}
			// requires_python came in the form; the metadata file is served.
			page := call(t, "GET", e.URL+"/pypi/py/simple/demo-pkg/", alice.Name, alice.Token, nil, nil).want(t, 200, `data-requires-python="&gt;=3.8"`)
			if !strings.Contains(page.Body, "data-core-metadata=") {
				t.Fatalf("wheel page lacks core metadata: %s", page.Body)
			}
			md := call(t, "GET", e.URL+"/pypi/py/files/demo-pkg/1.0/"+wheelName+".metadata", alice.Name, alice.Token, nil, nil).
				want(t, 200, "Name: Demo_Pkg")
			if md.Header.Get("X-Content-Type-Options") != "nosniff" { // the uploader wrote it
				t.Fatalf("metadata file served without nosniff: %v", md.Header)
			}
		})
	})
}

// TestAuthorization: anonymous callers are challenged for Basic
// credentials, callers without the right get 403, and a repository of
// another format is a plain 404.
func TestAuthorization(t *testing.T) {
	e := clienttest.Start(t)
	priv := e.CreateRepo("py", "pypi", false)
	e.CreateRepo("pub", "pypi", true)
	e.CreateRepo("js", "npm", false)
	alice := clienttest.NewUser(e, "alice")
	bob := clienttest.NewUser(e, "bob")
	e.Grant(priv, alice.ID, false, "write")
	e.Grant(priv, bob.ID, false, "read")
	content := []byte("sdist bytes")
	body, h := uploadForm(t, fieldsFor("demo", "1.0", "sdist", content), "demo-1.0.tar.gz", content)

	challenge := func(t *testing.T, r reply, why string) {
		t.Helper()
		r.want(t, http.StatusUnauthorized, why)
		if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="Depot"` {
			t.Fatalf("WWW-Authenticate %q", got)
		}
	}
	t.Run("anonymous on private", func(t *testing.T) {
		challenge(t, call(t, "GET", e.URL+"/pypi/py/simple/", "", "", nil, nil), "authentication required")
		challenge(t, call(t, "GET", e.URL+"/pypi/py/simple/demo/", "", "", nil, nil), "authentication required")
		challenge(t, call(t, "GET", e.URL+"/pypi/py/files/demo/1.0/demo-1.0.tar.gz", "", "", nil, nil), "authentication required")
		challenge(t, call(t, "POST", e.URL+"/pypi/py/", "", "", h, body), "authentication required")
	})
	t.Run("bad credentials", func(t *testing.T) {
		challenge(t, call(t, "GET", e.URL+"/pypi/py/simple/", alice.Name, "wrong", nil, nil), "invalid credentials")
		challenge(t, call(t, "POST", e.URL+"/pypi/py/", alice.Name, "wrong", h, body), "invalid credentials")
	})
	t.Run("anonymous on public", func(t *testing.T) {
		call(t, "GET", e.URL+"/pypi/pub/simple/", "", "", nil, nil).want(t, 200, "Simple index")
		challenge(t, call(t, "POST", e.URL+"/pypi/pub/", "", "", h, body), "authentication required")
	})
	t.Run("read-only user uploads", func(t *testing.T) {
		call(t, "POST", e.URL+"/pypi/py/", bob.Name, bob.Token, h, body).want(t, http.StatusForbidden, "bob may not write")
		call(t, "GET", e.URL+"/pypi/py/simple/", bob.Name, bob.Token, nil, nil).want(t, 200, "Simple index")
	})
	t.Run("wrong format", func(t *testing.T) {
		call(t, "GET", e.URL+"/pypi/js/simple/", "admin", origintest.AdminPassword, nil, nil).want(t, http.StatusNotFound, "repository js is a npm repository, not pypi: it is served at ")
		call(t, "POST", e.URL+"/pypi/js/", alice.Name, alice.Token, h, body).want(t, http.StatusNotFound, "repository js not found") // she may not read it
	})
	if n, _ := e.RepoCounters(priv); n != 0 {
		t.Fatalf("refused uploads left %d artifacts", n)
	}
	t.Run("writer uploads", func(t *testing.T) {
		call(t, "POST", e.URL+"/pypi/py/", alice.Name, alice.Password, h, body).want(t, 200, "OK")
		call(t, "GET", e.URL+"/pypi/py/files/demo/1.0/demo-1.0.tar.gz", bob.Name, bob.Token, nil, nil).want(t, 200, "sdist bytes")
	})
}
