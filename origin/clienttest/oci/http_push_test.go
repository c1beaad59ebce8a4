package oci_test

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/shared/format/oci"
)

// TestBlobUploads covers the push category of the conformance suite at
// the HTTP level: monolithic, POST-then-PUT, chunked (with and without
// Content-Range), status, cancel, mounts, digests, limits and stale
// sessions. Nothing failed may leave anything behind.
func TestBlobUploads(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *origin.Config) { c.MaxUploadBytes = 64 << 10 })
	repoID := e.CreateRepo("up", "docker", false)
	otherID := e.CreateRepo("other", "docker", false)
	alice := writer(e, "alice", repoID)
	e.Grant(otherID, alice.ID, false, "write")
	bob := writer(e, "bob", otherID)
	auth := basic(alice.Name, alice.Token)
	data := bytes.Repeat([]byte("0123456789"), 1000)
	d := sha(data)

	t.Run("monolithic and POST then PUT", func(t *testing.T) {
		e := e.For(t)
		pushBlob(t, e, auth, "up/mono", data)
		h := e.Do("HEAD", "/v2/up/mono/blobs/"+d, auth, nil).Want(200)
		if h.Header.Get("Content-Length") != strconv.Itoa(len(data)) || h.Header.Get("Docker-Content-Digest") != d || len(h.Body) != 0 {
			t.Fatalf("HEAD blob %v", h.Header)
		}
		g := e.Do("GET", "/v2/up/mono/blobs/"+d, auth, nil).Want(200)
		if !bytes.Equal(g.Body, data) {
			t.Fatal("GET blob returned other bytes")
		}
		if r := e.DoHeader("GET", "/v2/up/mono/blobs/"+d, auth, nil, map[string]string{"Range": "bytes=10-19"}).Want(206); string(r.Body) != "0123456789" {
			t.Fatalf("range GET %q", r.Body)
		}
		// Blobs belong to an image: another image does not see it.
		wantErr(t, e.Do("GET", "/v2/up/elsewhere/blobs/"+d, auth, nil), 404, "BLOB_UNKNOWN")

		r := e.Do("POST", "/v2/up/two/blobs/uploads/", auth, nil).Want(202)
		loc := path(t, e, r.Header.Get("Location"))
		e.Do("PUT", loc+"?digest="+d, auth, data).Want(201)
		e.Do("HEAD", "/v2/up/two/blobs/"+d, auth, nil).Want(200)
	})

	t.Run("chunked", func(t *testing.T) {
		e := e.For(t)
		r := e.Do("POST", "/v2/up/chunks/blobs/uploads/", auth, nil).Want(202)
		if r.Header.Get("Range") != "0-0" || r.Header.Get("Docker-Upload-UUID") == "" {
			t.Fatalf("start answered %v", r.Header)
		}
		loc := path(t, e, r.Header.Get("Location"))
		r = e.DoHeader("PATCH", loc, auth, data[:4000], map[string]string{"Content-Range": "0-3999", "Content-Type": "application/octet-stream"}).Want(202)
		if r.Header.Get("Range") != "0-3999" {
			t.Fatalf("after chunk 1: Range %q", r.Header.Get("Range"))
		}
		loc = path(t, e, r.Header.Get("Location"))
		// Out of order: 416, and the client learns where the upload is.
		r = e.DoHeader("PATCH", loc, auth, data[5000:6000], map[string]string{"Content-Range": "5000-5999"})
		wantErr(t, r, 416, "BLOB_UPLOAD_INVALID")
		if r.Header.Get("Range") != "0-3999" {
			t.Fatalf("416 Range %q", r.Header.Get("Range"))
		}
		// A chunk shorter than its Content-Range says is refused whole.
		wantErr(t, e.DoHeader("PATCH", loc, auth, data[4000:4500], map[string]string{"Content-Range": "4000-4999"}), 400, "SIZE_INVALID")
		wantErr(t, e.DoHeader("PATCH", loc, auth, data[4000:6000], map[string]string{"Content-Range": "4000-4999"}), 400, "SIZE_INVALID")
		if r := e.Do("GET", loc, auth, nil).Want(204); r.Header.Get("Range") != "0-3999" || r.Header.Get("Location") == "" {
			t.Fatalf("status answered %v", r.Header)
		}
		// docker streams without Content-Range.
		r = e.Do("PATCH", loc, auth, data[4000:8000]).Want(202)
		if r.Header.Get("Range") != "0-7999" {
			t.Fatalf("after stream: Range %q", r.Header.Get("Range"))
		}
		// The last chunk comes with the PUT; the whole blob is checked.
		r = e.DoHeader("PUT", loc+"?digest="+d, auth, data[8000:], map[string]string{"Content-Range": "8000-9999"}).Want(201)
		if r.Header.Get("Docker-Content-Digest") != d {
			t.Fatalf("PUT answered %v", r.Header)
		}
		if g := e.Do("GET", "/v2/up/chunks/blobs/"+d, auth, nil).Want(200); !bytes.Equal(g.Body, data) {
			t.Fatal("chunked blob differs")
		}
		wantErr(t, e.Do("GET", loc, auth, nil), 404, "BLOB_UPLOAD_UNKNOWN")
	})

	t.Run("cancel and foreign sessions", func(t *testing.T) {
		e := e.For(t)
		loc := path(t, e, e.Do("POST", "/v2/up/c/blobs/uploads/", auth, nil).Want(202).Header.Get("Location"))
		other := "/v2/other/c/blobs/uploads/" + filepath.Base(loc)
		wantErr(t, e.Do("GET", other, auth, nil), 404, "BLOB_UPLOAD_UNKNOWN")
		bobsView := e.Do("GET", loc, basic(bob.Name, bob.Token), nil)
		if bobsView.Status != 403 && bobsView.Status != 404 {
			t.Fatalf("bob reached alice's session: %d", bobsView.Status)
		}
		e.Do("DELETE", loc, auth, nil).Want(204)
		wantErr(t, e.Do("GET", loc, auth, nil), 404, "BLOB_UPLOAD_UNKNOWN")
		wantErr(t, e.Do("PATCH", "/v2/up/c/blobs/uploads/../../x", auth, "x"), 404, "UNSUPPORTED")
		wantErr(t, e.Do("PATCH", "/v2/up/c/blobs/uploads/notanid", auth, "x"), 404, "BLOB_UPLOAD_UNKNOWN")
	})

	t.Run("digests", func(t *testing.T) {
		e := e.For(t)
		before, size := e.RepoCounters(repoID)
		wrong := sha([]byte("something else"))
		wantErr(t, e.Do("POST", "/v2/up/bad/blobs/uploads/?digest="+wrong, auth, data), 400, "DIGEST_INVALID")
		wantErr(t, e.Do("GET", "/v2/up/bad/blobs/"+wrong, auth, nil), 404, "BLOB_UNKNOWN")
		wantErr(t, e.Do("POST", "/v2/up/bad/blobs/uploads/?digest=md5:d41d8cd98f00b204e9800998ecf8427e", auth, data), 400, "DIGEST_INVALID")
		wantErr(t, e.Do("GET", "/v2/up/bad/blobs/sha256:XYZ", auth, nil), 400, "DIGEST_INVALID")
		loc := path(t, e, e.Do("POST", "/v2/up/bad/blobs/uploads/", auth, nil).Want(202).Header.Get("Location"))
		wantErr(t, e.Do("PUT", loc+"?digest=", auth, data), 400, "DIGEST_INVALID")
		wantErr(t, e.Do("PUT", loc+"?digest="+wrong, auth, data), 400, "DIGEST_INVALID")
		// Wrong bytes are not kept: the client starts over.
		wantErr(t, e.Do("GET", loc, auth, nil), 404, "BLOB_UPLOAD_UNKNOWN")

		// sha512 digests work end to end.
		s := sha512.Sum512(data)
		d512 := "sha512:" + hex.EncodeToString(s[:])
		e.Do("POST", "/v2/up/s512/blobs/uploads/?digest="+d512, auth, data).Want(201)
		if g := e.Do("GET", "/v2/up/s512/blobs/"+d512, auth, nil).Want(200); !bytes.Equal(g.Body, data) || g.Header.Get("Docker-Content-Digest") != d512 {
			t.Fatalf("sha512 blob: %v", g.Header)
		}
		if n, sz := e.RepoCounters(repoID); n != before || sz != size {
			t.Fatalf("blob uploads changed the artifact counters: %d/%d -> %d/%d", before, size, n, sz)
		}
	})

	t.Run("size limit", func(t *testing.T) {
		e := e.For(t)
		big := bytes.Repeat([]byte("x"), 70<<10)
		wantErr(t, e.Do("POST", "/v2/up/big/blobs/uploads/?digest="+sha(big), auth, big), 413, "SIZE_INVALID")
		loc := path(t, e, e.Do("POST", "/v2/up/big/blobs/uploads/", auth, nil).Want(202).Header.Get("Location"))
		e.Do("PATCH", loc, auth, big[:40<<10]).Want(202)
		wantErr(t, e.Do("PATCH", loc, auth, big[40<<10:]), 413, "SIZE_INVALID")
		// The refused chunk left nothing behind.
		if r := e.Do("GET", loc, auth, nil).Want(204); r.Header.Get("Range") != "0-"+strconv.Itoa(40<<10-1) {
			t.Fatalf("after a refused chunk: Range %q", r.Header.Get("Range"))
		}
	})

	t.Run("mount", func(t *testing.T) {
		e := e.For(t)
		src := pushBlob(t, e, auth, "up/src", []byte("mountable"))
		r := e.Do("POST", "/v2/other/dst/blobs/uploads/?mount="+src+"&from=up/src", auth, nil).Want(201)
		if r.Header.Get("Docker-Content-Digest") != src || !bytes.HasSuffix([]byte(r.Header.Get("Location")), []byte("/v2/other/dst/blobs/"+src)) {
			t.Fatalf("mount answered %v", r.Header)
		}
		e.Do("GET", "/v2/other/dst/blobs/"+src, auth, nil).Want(200)
		// bob may write other but not read up: no mount, a session instead.
		r = e.Do("POST", "/v2/other/bobs/blobs/uploads/?mount="+src+"&from=up/src", basic(bob.Name, bob.Token), nil).Want(202)
		if r.Header.Get("Location") == "" {
			t.Fatal("refused mount gave no session")
		}
		wantErr(t, e.Do("GET", "/v2/other/bobs/blobs/"+src, basic(bob.Name, bob.Token), nil), 404, "BLOB_UNKNOWN")
		// Unknown blob or source: a session as well.
		e.Do("POST", "/v2/other/dst/blobs/uploads/?mount="+sha([]byte("nope"))+"&from=up/src", auth, nil).Want(202)
		e.Do("POST", "/v2/other/dst/blobs/uploads/?mount="+src+"&from=nosuch/x", auth, nil).Want(202)
	})

	t.Run("delete blob", func(t *testing.T) {
		e := e.For(t)
		bd := pushBlob(t, e, auth, "up/del", []byte("delete me"))
		wantErr(t, e.Do("DELETE", "/v2/up/del/blobs/"+bd, basic(bob.Name, bob.Token), nil), 404, "NAME_UNKNOWN") // bob cannot read up
		e.Do("DELETE", "/v2/up/del/blobs/"+bd, auth, nil).Want(202)
		wantErr(t, e.Do("GET", "/v2/up/del/blobs/"+bd, auth, nil), 404, "BLOB_UNKNOWN")
		wantErr(t, e.Do("DELETE", "/v2/up/del/blobs/"+bd, auth, nil), 404, "BLOB_UNKNOWN")
	})

	t.Run("one user cannot hold every upload session", func(t *testing.T) {
		e := e.For(t)
		greedy := writer(e, "greedy", repoID)
		g := basic(greedy.Name, greedy.Token)
		for i := 0; i < oci.MaxSessionsPerUser; i++ {
			e.Do("POST", "/v2/up/many/blobs/uploads/", g, nil).Want(202)
		}
		wantErr(t, e.Do("POST", "/v2/up/many/blobs/uploads/", g, nil), 429, "TOOMANYREQUESTS")
		e.Do("POST", "/v2/up/many/blobs/uploads/", auth, nil).Want(202) // others still can
	})

	t.Run("stale sessions are swept", func(t *testing.T) {
		e := e.For(t)
		loc := path(t, e, e.Do("POST", "/v2/up/stale/blobs/uploads/", auth, nil).Want(202).Header.Get("Location"))
		dir := filepath.Join(e.DataDir, "blobs", "uploads", filepath.Base(loc))
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("session directory: %v", err)
		}
		e.Clock.Advance(25 * time.Hour)
		defer e.Clock.Advance(-25 * time.Hour)
		wantErr(t, e.Do("GET", loc, auth, nil), 404, "BLOB_UPLOAD_UNKNOWN")
		e.Do("POST", "/v2/up/stale/blobs/uploads/", auth, nil).Want(202) // sweeps
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("stale session still on disk: %v", err)
		}
	})
}
