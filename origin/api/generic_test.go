package api_test

import (
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

func TestGeneric(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("bin", "generic", false)
	writer := newUser(e, "writer", "user")
	replacer := newUser(e, "replacer", "user")
	deleter := newUser(e, "deleter", "user")
	e.Grant(repoID, writer.id, false, "write")
	e.Grant(repoID, replacer.id, false, "write", "delete")
	e.Grant(repoID, deleter.id, false, "delete")

	t.Run("put get head delete", func(t *testing.T) {
		e := e.For(t)
		const body = "generic payload"
		_, _, wantSHA256 := sums(body)
		r := e.Do("PUT", "/generic/bin/tool/1.0/tool.txt", writer.token, body).Want(201)
		var a artifact
		r.JSON(&a)
		if a.ID == "" || a.RepositoryID != repoID || a.PackageName != "tool" || a.Version != "1.0" || a.Path != "tool/1.0/tool.txt" ||
			a.SizeBytes != int64(len(body)) || a.Checksums.SHA256 != wantSHA256 || a.UploadedBy != "writer" {
			t.Fatalf("upload answered %s", r.Body)
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("upload answer Content-Type %q", r.Header.Get("Content-Type"))
		}
		// The upload answer has the same shape as GET /artifacts/:id.
		var fromAPI map[string]any
		e.Do("GET", "/api/v1/artifacts/"+a.ID, writer.token, nil).Want(200).JSON(&fromAPI)
		if up := r.Map(); !reflect.DeepEqual(up, fromAPI) || up["repository_name"] != "bin" {
			t.Fatalf("upload answered %v, API answers %v", up, fromAPI)
		}
		if idx, err := strconv.ParseUint(r.Header.Get("X-Depot-Index"), 10, 64); err != nil || idx == 0 {
			t.Fatalf("X-Depot-Index %q", r.Header.Get("X-Depot-Index"))
		}
		if loc := r.Header.Get("Location"); !strings.HasSuffix(loc, "/generic/bin/tool/1.0/tool.txt") {
			t.Fatalf("Location %q", loc)
		}
		wantArtifactCount(t, e, repoID, 1)

		g := e.Do("GET", "/generic/bin/tool/1.0/tool.txt", writer.token, nil).Want(200)
		// Uploaded content never runs in a browser on the registry's origin.
		if g.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(g.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("download lacks content safety headers: %v", g.Header)
		}
		if string(g.Body) != body || g.Header.Get("X-Checksum-Sha256") != wantSHA256 || !strings.HasPrefix(g.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET answered %q with %v", g.Body, g.Header)
		}
		h := e.Do("HEAD", "/generic/bin/tool/1.0/tool.txt", writer.token, nil).Want(200)
		if len(h.Body) != 0 || h.Header.Get("Content-Length") != strconv.Itoa(len(body)) || h.Header.Get("X-Checksum-Sha256") != wantSHA256 {
			t.Fatalf("HEAD answered body %q, headers %v", h.Body, h.Header)
		}
		e.Do("HEAD", "/generic/bin/tool/1.0/missing.txt", writer.token, nil).Want(404)
		if r := e.DoHeader("GET", "/generic/bin/tool/1.0/tool.txt", writer.token, nil, map[string]string{"Range": "bytes=0-6"}).Want(206); string(r.Body) != body[:7] {
			t.Fatalf("range GET answered %q", r.Body)
		}
		if etag := g.Header.Get("ETag"); etag != `"`+wantSHA256+`"` {
			t.Fatalf("ETag %q", etag)
		}
		e.DoHeader("GET", "/generic/bin/tool/1.0/tool.txt", writer.token, nil, map[string]string{"If-None-Match": g.Header.Get("ETag")}).Want(304)

		e.Do("DELETE", "/generic/bin/tool/1.0/tool.txt", writer.token, nil).WantError(403, "FORBIDDEN")
		d := e.Do("DELETE", "/generic/bin/tool/1.0/tool.txt", deleter.token, nil).Want(204)
		if len(d.Body) != 0 || d.Header.Get("X-Depot-Index") == "" {
			t.Fatalf("DELETE answered %q, headers %v", d.Body, d.Header)
		}
		e.Do("GET", "/generic/bin/tool/1.0/tool.txt", writer.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/artifacts/"+a.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("DELETE", "/generic/bin/tool/1.0/tool.txt", deleter.token, nil).WantError(404, "NOT_FOUND")
		wantArtifactCount(t, e, repoID, 0)
	})

	t.Run("re-upload", func(t *testing.T) {
		e := e.For(t)
		put(e, writer.token, "bin/re/1.0/f.txt", "first")
		e.Do("PUT", "/generic/bin/re/1.0/f.txt", writer.token, "second").WantError(409, "CONFLICT")
		if got := e.Do("GET", "/generic/bin/re/1.0/f.txt", writer.token, nil).Want(200).Body; string(got) != "first" {
			t.Fatalf("after a refused overwrite the file holds %q", got)
		}
		// delete without write may not upload at all.
		e.Do("PUT", "/generic/bin/re/1.0/f.txt", deleter.token, "third").WantError(403, "FORBIDDEN")
		before := getRepo(e, repoID)
		a := put(e, replacer.token, "bin/re/1.0/f.txt", "overwritten")
		if got := e.Do("GET", "/generic/bin/re/1.0/f.txt", writer.token, nil).Want(200).Body; string(got) != "overwritten" {
			t.Fatalf("after an overwrite the file holds %q", got)
		}
		after := getRepo(e, repoID)
		if after.ArtifactCount != before.ArtifactCount || after.SizeBytes != before.SizeBytes-int64(len("first"))+int64(len("overwritten")) {
			t.Fatalf("counters after overwrite %d/%d, before %d/%d", after.ArtifactCount, after.SizeBytes, before.ArtifactCount, before.SizeBytes)
		}
		if got := e.Do("GET", "/api/v1/artifacts/"+a.ID+"/download", writer.token, nil).Want(200).Body; string(got) != "overwritten" {
			t.Fatalf("API download after overwrite %q", got)
		}
	})

	t.Run("credentials", func(t *testing.T) {
		e := e.For(t)
		put(e, e.Admin, "bin/cred/1.0/f.txt", "x")
		tok := e.Token(writer.token, []string{"repository:write:bin"}, nil)
		for _, c := range []struct{ what, cred string }{
			{"basic password", basic("writer", userPW)},
			{"basic password, other case", basic("WRITER", userPW)},
			{"basic token", basic("writer", tok)},
			{"basic __token__", basic("__token__", tok)},
			{"bearer jwt", "Bearer " + writer.token},
			{"bearer token", "Bearer " + tok},
		} {
			if r := e.Do("GET", "/generic/bin/cred/1.0/f.txt", c.cred, nil); r.Status != 200 {
				t.Fatalf("%s: GET status %d: %s", c.what, r.Status, r.Body)
			}
			if r := e.Do("PUT", "/generic/bin/cred/1.0/"+strings.ReplaceAll(c.what, " ", "-"), c.cred, "y"); r.Status != 201 {
				t.Fatalf("%s: PUT status %d: %s", c.what, r.Status, r.Body)
			}
		}
		for _, c := range []struct{ what, cred string }{
			{"wrong password", basic("writer", "wrong-password")},
			{"unknown user", basic("nobody", userPW)},
			{"token of someone else", basic("deleter", tok)},
			{"unknown token", basic("writer", "dpt_unknown")},
			{"bad jwt", "Bearer not.a.jwt"},
			{"bad base64", "Basic %%%"},
		} {
			r := e.Do("GET", "/generic/bin/cred/1.0/f.txt", c.cred, nil)
			if r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") || r.ErrorCode() != "UNAUTHORIZED" {
				t.Fatalf("%s: status %d, WWW-Authenticate %q, body %s; want 401 with a Basic challenge",
					c.what, r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
			}
			if r := e.Do("PUT", "/generic/bin/cred/1.0/"+strings.ReplaceAll(c.what, " ", "-"), c.cred, "y"); r.Status != 401 {
				t.Fatalf("%s: PUT status %d", c.what, r.Status)
			}
		}
	})

	t.Run("repository of another format", func(t *testing.T) {
		e := e.For(t)
		e.CreateRepo("npmjs", "npm", false)
		e.Do("PUT", "/generic/npmjs/p/1.0/f.txt", e.Admin, "x").WantError(404, "NOT_FOUND")
		e.Do("GET", "/generic/npmjs/p/1.0/f.txt", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("PUT", "/generic/missing/p/1.0/f.txt", e.Admin, "x").WantError(404, "NOT_FOUND")
	})

	t.Run("unsupported method", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/generic/bin/p/1.0/f.txt", e.Admin, "x").Want(405)
	})
}

func TestGenericRejectsBadPaths(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("r", "generic", false)
	e.CreateRepo("x", "generic", false)
	for _, p := range []string{
		"/generic/r/../x/1/f",
		"/generic/r/%2e%2e/1/f",
		"/generic/r/p/%2E%2E/f",
		"/generic/r/p/1/%2e%2e",
		"/generic/r/p/1/.",
		"/generic/r/p/f",
		"/generic/r/p",
		"/generic/r",
		"/generic/r/p/1/d/f",
		"/generic/r/p/1/a%5Cb",
		"/generic/r/p/1/a%2Fb",
		"/generic/r/p/1/a%00b",
		"/generic/r/p/1/a%0Ab",
		"/generic/r//1/f",
		"/generic/r/p/1/" + strings.Repeat("f", 256),
	} {
		r := e.Do("PUT", p, e.Admin, "evil")
		if r.Status != 400 && r.Status != 404 {
			t.Errorf("PUT %s: status %d, want 400 or 404; body %s", p, r.Status, r.Body)
		}
		if r.ErrorCode() == "" {
			t.Errorf("PUT %s: no error body: %s", p, r.Body)
		}
		// Without following redirects the upload is not accepted either.
		if st := putNoRedirect(t, e.URL+p, e.Admin, "evil"); st < 300 {
			t.Errorf("PUT %s without following redirects: status %d", p, st)
		}
	}
	var s stats
	e.Do("GET", "/api/v1/admin/stats", e.Admin, nil).Want(200).JSON(&s)
	if *s.Artifacts != 0 {
		t.Fatalf("bad paths stored %d artifacts", *s.Artifacts)
	}
	wantArtifactCount(t, e, repoID, 0)
}

func TestGenericChecksums(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("sums", "generic", false)
	const body = "checked content"
	md5sum, sha1sum, sha256sum := sums(body)
	_, _, other := sums("something else")

	for _, h := range []map[string]string{
		{"X-Checksum-Sha256": other},
		{"X-Checksum-Sha1": strings.Repeat("0", 40)},
		{"X-Checksum-Md5": strings.Repeat("0", 32)},
		{"X-Checksum-Sha256": sha256sum, "X-Checksum-Md5": strings.Repeat("0", 32)},
	} {
		e.DoHeader("PUT", "/generic/sums/p/1/f.txt", e.Admin, body, h).WantError(400, "BAD_REQUEST")
	}
	wantArtifactCount(t, e, repoID, 0)
	e.Do("GET", "/generic/sums/p/1/f.txt", e.Admin, nil).WantError(404, "NOT_FOUND")

	e.DoHeader("PUT", "/generic/sums/p/1/f.txt", e.Admin, body, map[string]string{
		"X-Checksum-Sha256": strings.ToUpper(sha256sum), "X-Checksum-Sha1": sha1sum, "X-Checksum-Md5": md5sum}).Want(201)
	wantArtifactCount(t, e, repoID, 1)
}

func TestGenericUploadLimit(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.MaxUploadBytes = 1024 }})
	repoID := e.CreateRepo("small", "generic", false)
	e.Do("PUT", "/generic/small/p/1/big", e.Admin, strings.Repeat("x", 1025)).WantError(413, "PAYLOAD_TOO_LARGE")
	e.Do("PUT", "/generic/small/p/1/huge", e.Admin, strings.Repeat("x", 64<<10)).WantError(413, "PAYLOAD_TOO_LARGE")
	wantArtifactCount(t, e, repoID, 0)
	e.Do("GET", "/generic/small/p/1/big", e.Admin, nil).WantError(404, "NOT_FOUND")
	put(e, e.Admin, "small/p/1/fits", strings.Repeat("x", 1024))
	wantArtifactCount(t, e, repoID, 1)
}

// putNoRedirect uploads body and reports the first answer's status.
func putNoRedirect(t *testing.T, url, token, body string) int {
	t.Helper()
	req, err := http.NewRequest("PUT", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestGenericActiveContentIsDownloaded: a file uploaded with a type a
// browser would render or run (HTML, SVG, XML, a UTF-7 text) is served as
// application/octet-stream in an attachment, on the generic path and
// through the API; inert types keep theirs.
func TestGenericActiveContentIsDownloaded(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("web", "generic", true)
	const png = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	for _, c := range []struct {
		file, ct, body string
		active         bool
	}{
		{"page.html", "text/html", "<script>alert(document.cookie)</script>", true},
		{"page.txt", "text/html; charset=utf-8", "<script>alert(1)</script>", true},
		{"pic.svg", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, true},
		{"notes.txt", "text/plain; charset=utf-7", "+ADw-script+AD4-alert(1)+ADw-/script+AD4-", true},
		{"feed.xml", "application/xml", "<x/>", true},
		{"app.js", "application/javascript", "alert(1)", true},
		{"bad.bin", "text/html;;", "x", true},
		{"pic.png", "image/png", png, false},
		{"data.json", "application/json", `{"a":1}`, false},
		{"readme.txt", "text/plain; charset=utf-8", "hello", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			e := e.For(t)
			var a artifact
			e.DoHeader("PUT", "/generic/web/site/1.0/"+c.file, e.Admin, c.body, map[string]string{"Content-Type": c.ct}).Want(201).JSON(&a)
			for _, p := range []string{"/generic/web/site/1.0/" + c.file, "/api/v1/artifacts/" + a.ID + "/download"} {
				for _, method := range []string{"GET", "HEAD"} {
					r := e.Do(method, p, "", nil).Want(200)
					h := r.Header
					api := strings.HasPrefix(p, "/api/")
					wantCT, wantCD := c.ct, ""
					if c.active {
						wantCT = "application/octet-stream"
					}
					if c.active || api {
						wantCD = "attachment; filename=" + c.file
					}
					if h.Get("Content-Type") != wantCT || h.Get("Content-Disposition") != wantCD {
						t.Errorf("%s %s: Content-Type %q, Content-Disposition %q; want %q, %q",
							method, p, h.Get("Content-Type"), h.Get("Content-Disposition"), wantCT, wantCD)
					}
					if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
						t.Errorf("%s %s: no content safety headers: %v", method, p, h)
					}
					if method == "GET" && string(r.Body) != c.body {
						t.Errorf("GET %s answered %q", p, r.Body)
					}
				}
			}
		})
	}
}

// TestGenericRefusesHiddenCharacters: a name holding a bidi control or an
// invisible character ("evil<U+202E>gpj.exe" lists as "evilexe.jpg") is
// refused with 400 naming the code point, and nothing is stored.
func TestGenericRefusesHiddenCharacters(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("bin", "generic", false)
	for _, c := range []struct{ path, cp string }{
		{"tool/1.0/" + url.PathEscape("evil\u202Egpj.exe"), "U+202E"},
		{url.PathEscape("to\u200Bol") + "/1.0/tool.exe", "U+200B"},
		{"tool/" + url.PathEscape("1.0\u2066") + "/tool.exe", "U+2066"},
		{"tool/1.0/" + url.PathEscape("\uFEFFtool.exe"), "U+FEFF"},
		{"tool/1.0/" + url.PathEscape("soft\u00ADhyphen"), "U+00AD"},
		{"tool/1.0/" + url.PathEscape("c1\u009Bcontrol"), "U+009B"},
	} {
		r := e.Do("PUT", "/generic/bin/"+c.path, e.Admin, "MZ payload").WantError(400, "BAD_REQUEST")
		if !strings.Contains(string(r.Body), c.cp) {
			t.Errorf("PUT %s: the answer does not name %s: %s", c.path, c.cp, r.Body)
		}
	}
	wantArtifactCount(t, e, repoID, 0)
	var s stats
	e.Do("GET", "/api/v1/admin/stats", e.Admin, nil).Want(200).JSON(&s)
	if *s.Artifacts != 0 {
		t.Fatalf("refused uploads stored %d artifacts", *s.Artifacts)
	}
	blobs := 0
	_ = filepath.WalkDir(filepath.Join(e.DataDir, "blobs"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			blobs++
		}
		return nil
	})
	if blobs != 0 {
		t.Fatalf("refused uploads left %d files in the blob store", blobs)
	}
}
