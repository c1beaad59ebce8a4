package peerrpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// The requests and answers below are those of the build before the RPC
// was declared in this package, byte for byte: origins of that build and
// of this one talk during a rolling upgrade. A change that fails these
// tests breaks that; add a route or a field instead.

const (
	digest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" // "hello"
	hexSum = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	id     = "0a1b2c3d00000000000000000000abcd"
)

var modTime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// recorded is one request as the server saw it.
type recorded struct{ line, body, length string }

// recorder answers every request from answers (by "METHOD path") and
// records what it was sent.
type recorder struct {
	mu      sync.Mutex
	got     []recorded
	answers map[string]func(w http.ResponseWriter)
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, recorded{line: r.Method + " " + r.URL.RequestURI(), body: string(body), length: r.Header.Get("Content-Length")})
	rc.mu.Unlock()
	if a, ok := rc.answers[r.Method+" "+r.URL.Path]; ok {
		a(w)
		return
	}
	http.Error(w, "unexpected", http.StatusTeapot)
}

func (rc *recorder) last(t *testing.T) recorded {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) == 0 {
		t.Fatal("nothing was sent")
	}
	return rc.got[len(rc.got)-1]
}

func answer(status int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestClientSendsTheWire: what each client call sends, and how it reads
// the answers the earlier build's origins give.
func TestClientSendsTheWire(t *testing.T) {
	rc := &recorder{answers: map[string]func(http.ResponseWriter){
		"POST /v1/apply":           answer(200, `{"index":42,"error":{"kind":"conflict","text":"taken"}}`+"\n"),
		"GET /v1/index":            answer(200, `{"index":9}`+"\n"),
		"POST /v1/remove-peer":     answer(204, ""),
		"HEAD /v1/blobs/" + digest: answer(200, ""),
		"GET /v1/blobs/" + digest:  answer(200, "hello"),
		"PUT /v1/blobs/" + digest:  answer(201, ""),
		"GET /v1/uploads/" + id:    answer(200, `{"label":"bGFiZWw=","size":3,"mod_time":"2030-01-02T03:04:05Z"}`+"\n"),
		"PATCH /v1/uploads/" + id:  answer(200, `{"label":"bGFiZWw=","size":6,"mod_time":"2030-01-02T03:04:05Z"}`+"\n"),
		"POST /v1/uploads/" + id:   answer(200, `{"Digest":"`+digest+`","Size":5,"Checksums":{"md5":"m","sha1":"s1","sha256":"`+hexSum+`","sha512":"s5"}}`+"\n"),
		"DELETE /v1/uploads/" + id: answer(200, `{"label":"bGFiZWw=","size":6,"mod_time":"2030-01-02T03:04:05Z"}`+"\n"),
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := peerrpc.NewClient(dialTCP)
	ctx := t.Context()
	want := func(line, body string) {
		t.Helper()
		if got := rc.last(t); got.line != line || got.body != body {
			t.Fatalf("sent %q with body %q, want %q with %q", got.line, got.body, line, body)
		}
	}

	a, err := c.Apply(ctx, addr, []byte("encoded command"))
	if err != nil || a.Index != 42 || a.Err == nil || !errors.Is(a.Err.Err(), meta.ErrConflict) {
		t.Fatalf("Apply = %+v, %v", a, err)
	}
	want("POST /v1/apply", "encoded command")

	if idx, err := c.Index(ctx, addr); err != nil || idx != 9 {
		t.Fatalf("Index = %d, %v", idx, err)
	}
	want("GET /v1/index", "")

	if err := c.RemovePeer(ctx, addr, "origin-2"); err != nil {
		t.Fatalf("RemovePeer: %v", err)
	}
	want("POST /v1/remove-peer", "origin-2")

	if !c.HasBlob(ctx, addr, digest) {
		t.Fatal("HasBlob: false")
	}
	want("HEAD /v1/blobs/"+digest, "")

	body, err := c.GetBlob(ctx, addr, digest)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(body); string(b) != "hello" {
		t.Fatalf("GetBlob read %q", b)
	}
	body.Close()
	want("GET /v1/blobs/"+digest, "")

	if err := c.PushBlob(ctx, addr, digest, strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	want("PUT /v1/blobs/"+digest, "hello")
	if got := rc.last(t).length; got != "5" {
		t.Fatalf("a push's Content-Length is %q, want 5", got)
	}

	st, err := c.Upload(ctx, addr, id)
	if err != nil || string(st.Label) != "label" || st.Size != 3 || !st.ModTime.Equal(modTime) {
		t.Fatalf("Upload = %+v, %v", st, err)
	}
	want("GET /v1/uploads/"+id, "")

	st, err = c.AppendUpload(ctx, addr, id, peerrpc.AppendRequest{Offset: 3, Max: 100}, strings.NewReader("abc"))
	if err != nil || st.Size != 6 {
		t.Fatalf("AppendUpload = %+v, %v", st, err)
	}
	want("PATCH /v1/uploads/"+id+"?max=100&offset=3", "abc")

	info, err := c.CommitUpload(ctx, addr, id, peerrpc.CommitRequest{Offset: 6, Expect: peerrpc.Checksums{SHA256: hexSum}})
	wantInfo := blob.Info{Digest: digest, Size: 5, Checksums: blob.Checksums{MD5: "m", SHA1: "s1", SHA256: hexSum, SHA512: "s5"}}
	if err != nil || info.Blob() != wantInfo {
		t.Fatalf("CommitUpload = %+v, %v", info, err)
	}
	want("POST /v1/uploads/"+id+"?offset=6", `{"md5":"","sha1":"","sha256":"`+hexSum+`"}`)

	if err := c.CancelUpload(ctx, addr, id); err != nil {
		t.Fatal(err)
	}
	want("DELETE /v1/uploads/"+id, "")
}

// fakeLeader answers as told.
type fakeLeader struct {
	apply  peerrpc.ApplyAnswer
	err    error
	got    []byte
	index  uint64
	remove string
}

func (f *fakeLeader) Apply(_ context.Context, cmd []byte) (peerrpc.ApplyAnswer, error) {
	f.got = cmd
	return f.apply, f.err
}

func (f *fakeLeader) Index(context.Context) (uint64, error) { return f.index, f.err }

func (f *fakeLeader) RemovePeer(_ context.Context, id string) error {
	f.remove = id
	return f.err
}

// fakeBlobs holds blobs in memory; takeErr refuses pushes.
type fakeBlobs struct {
	held    map[string]string
	taken   string
	takeErr error
}

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

func (f *fakeBlobs) OpenHere(_ context.Context, d string) (blob.File, error) {
	b, ok := f.held[d]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return memFile{bytes.NewReader([]byte(b))}, nil
}

func (f *fakeBlobs) Take(_ context.Context, d string, body io.Reader) (bool, error) {
	if f.takeErr != nil {
		return false, f.takeErr
	}
	b, _ := io.ReadAll(body)
	if _, ok := f.held[d]; ok {
		return false, nil
	}
	f.held[d], f.taken = string(b), string(b)
	return true, nil
}

// fakeUpload is an upload of fakeUploads.
type fakeUpload struct {
	size      int64
	data      string
	cancelled bool
	expect    blob.Checksums
	err       error // of every change
}

func (u *fakeUpload) ID() string         { return id }
func (u *fakeUpload) Label() []byte      { return []byte("label") }
func (u *fakeUpload) Size() int64        { return u.size }
func (u *fakeUpload) ModTime() time.Time { return modTime }

func (u *fakeUpload) Append(_ context.Context, r io.Reader, max int64) (int64, error) {
	if u.err != nil {
		return 0, u.err
	}
	b, _ := io.ReadAll(r)
	if max > 0 && u.size+int64(len(b)) > max {
		return 0, blob.ErrTooLarge
	}
	u.data += string(b)
	u.size += int64(len(b))
	return int64(len(b)), nil
}

func (u *fakeUpload) Commit(_ context.Context, expect blob.Checksums) (blob.Info, error) {
	u.expect = expect
	if u.err != nil {
		return blob.Info{}, u.err
	}
	return blob.Info{Digest: digest, Size: u.size, Checksums: blob.Checksums{SHA256: hexSum}}, nil
}

func (u *fakeUpload) Cancel(context.Context) error {
	u.cancelled = true
	return u.err
}

type fakeUploads struct {
	u   *fakeUpload
	err error
}

func (f *fakeUploads) ResumeHere(_ context.Context, got string) (blob.Upload, error) {
	if f.err != nil {
		return nil, f.err
	}
	if got != id {
		return nil, blob.ErrUploadUnknown
	}
	return f.u, nil
}

// do sends a request as the earlier build's clients do and returns the
// answer's status and body.
func do(t *testing.T, h http.Handler, method, target, body string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	return w.Code, w.Body.String()
}

// TestServerAnswersTheWire: what the server answers the requests the
// earlier build's origins send.
func TestServerAnswersTheWire(t *testing.T) {
	lead := &fakeLeader{apply: peerrpc.ApplyAnswer{Index: 42}, index: 9}
	blobs := &fakeBlobs{held: map[string]string{digest: "hello"}}
	up := &fakeUpload{size: 3, data: "abc"}
	h := peerrpc.Handler(peerrpc.Services{Leader: lead, Blobs: blobs, Uploads: &fakeUploads{u: up}})
	check := func(method, target, body string, status int, answer string) {
		t.Helper()
		if code, got := do(t, h, method, target, body); code != status || got != answer {
			t.Fatalf("%s %s: %d %q, want %d %q", method, target, code, got, status, answer)
		}
	}

	check("POST", "/v1/apply", "encoded command", 200, `{"index":42}`+"\n")
	if string(lead.got) != "encoded command" {
		t.Fatalf("the leader was given %q", lead.got)
	}
	lead.apply = peerrpc.ApplyAnswer{Index: 43, Err: &meta.WireError{Kind: "conflict", Text: "taken"}}
	check("POST", "/v1/apply", "x", 200, `{"index":43,"error":{"kind":"conflict","text":"taken"}}`+"\n")
	check("GET", "/v1/index", "", 200, `{"index":9}`+"\n")
	check("POST", "/v1/remove-peer", "origin-2", 204, "")
	if lead.remove != "origin-2" {
		t.Fatalf("the leader was asked to remove %q", lead.remove)
	}

	check("HEAD", "/v1/blobs/"+digest, "", 200, "")
	check("GET", "/v1/blobs/"+digest, "", 200, "hello")
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/v1/blobs/"+digest, nil)
	r.Header.Set("Range", "bytes=1-3")
	h.ServeHTTP(w, r)
	if w.Code != 206 || w.Body.String() != "ell" {
		t.Fatalf("a ranged read: %d %q", w.Code, w.Body.String())
	}
	other := "sha256:" + strings.Repeat("ab", 32)
	check("PUT", "/v1/blobs/"+other, "pushed", 201, "")
	if blobs.taken != "pushed" {
		t.Fatalf("the push stored %q", blobs.taken)
	}
	check("PUT", "/v1/blobs/"+digest, "hello", 204, "")

	state := func(size int) string {
		return `{"label":"bGFiZWw=","size":` + string(rune('0'+size)) + `,"mod_time":"2030-01-02T03:04:05Z"}` + "\n"
	}
	check("GET", "/v1/uploads/"+id, "", 200, state(3))
	check("PATCH", "/v1/uploads/"+id+"?max=100&offset=3", "def", 200, state(6))
	if up.data != "abcdef" {
		t.Fatalf("the upload holds %q", up.data)
	}
	check("POST", "/v1/uploads/"+id+"?offset=6", `{"md5":"","sha1":"","sha256":"`+hexSum+`"}`, 200,
		`{"Digest":"`+digest+`","Size":6,"Checksums":{"md5":"","sha1":"","sha256":"`+hexSum+`"}}`+"\n")
	if up.expect != (blob.Checksums{SHA256: hexSum}) {
		t.Fatalf("the commit expected %+v", up.expect)
	}
	check("DELETE", "/v1/uploads/"+id, "", 200, state(6))
	if !up.cancelled {
		t.Fatal("DELETE did not cancel the upload")
	}
}

// TestRefusals: each route's refusals, from the server's service to the
// client's error, and the statuses they travel as.
func TestRefusals(t *testing.T) {
	lead := &fakeLeader{}
	blobs := &fakeBlobs{held: map[string]string{}}
	ups := &fakeUploads{u: &fakeUpload{size: 3}}
	h := peerrpc.Handler(peerrpc.Services{Leader: lead, Blobs: blobs, Uploads: ups})
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := peerrpc.NewClient(dialTCP)
	ctx := t.Context()
	status := func(t *testing.T, method, target, body string, want int) {
		t.Helper()
		if code, msg := do(t, h, method, target, body); code != want {
			t.Fatalf("%s %s: %d %q, want %d", method, target, code, msg, want)
		}
	}

	t.Run("apply", func(t *testing.T) {
		lead.err = peerrpc.ErrNotLeader
		status(t, "POST", "/v1/apply", "x", 421)
		if _, err := c.Apply(ctx, addr, []byte("x")); !errors.Is(err, peerrpc.ErrNotLeader) {
			t.Fatalf("421: %v, want ErrNotLeader", err)
		}
		lead.err = errors.New("leadership lost")
		status(t, "POST", "/v1/apply", "x", 503)
		if _, err := c.Apply(ctx, addr, []byte("x")); !errors.Is(err, meta.ErrUnknownOutcome) {
			t.Fatalf("503: %v, want ErrUnknownOutcome", err)
		}
		lead.err = peerrpc.BadRequest("not a command: garbage")
		status(t, "POST", "/v1/apply", "x", 400)
		_, err := c.Apply(ctx, addr, []byte("x"))
		if err == nil || errors.Is(err, meta.ErrUnknownOutcome) || !strings.Contains(err.Error(), "not a command: garbage") {
			t.Fatalf("400: %v, want the leader's refusal", err)
		}
		lead.err = nil
		status(t, "GET", "/v1/apply", "", 405)
		status(t, "POST", "/v1/apply", strings.Repeat("x", peerrpc.MaxCommand+1), 413)
		// A peer that cannot be reached took nothing.
		gone := httptest.NewServer(h)
		gone.Close()
		if _, err := c.Apply(ctx, strings.TrimPrefix(gone.URL, "http://"), []byte("x")); !errors.Is(err, peerrpc.ErrNotSent) {
			t.Fatalf("no connection: %v, want ErrNotSent", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.Apply(cancelled, addr, []byte("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v, want context.Canceled", err)
		}
	})

	t.Run("index and remove-peer", func(t *testing.T) {
		lead.err = peerrpc.ErrNotLeader
		defer func() { lead.err = nil }()
		status(t, "GET", "/v1/index", "", 421)
		if _, err := c.Index(ctx, addr); err == nil {
			t.Fatal("Index of a node that does not lead succeeded")
		}
		status(t, "POST", "/v1/remove-peer", "origin-2", 421)
		lead.err = errors.New("configuration change in progress")
		status(t, "POST", "/v1/remove-peer", "origin-2", 503)
		if err := c.RemovePeer(ctx, addr, "origin-2"); err == nil || !strings.Contains(err.Error(), "configuration change in progress") {
			t.Fatalf("RemovePeer refused: %v", err)
		}
		status(t, "POST", "/v1/remove-peer", "", 400)
		status(t, "GET", "/v1/remove-peer", "origin-2", 400)
	})

	t.Run("blobs", func(t *testing.T) {
		status(t, "GET", "/v1/blobs/sha256:nothex", "", 400)
		status(t, "PUT", "/v1/blobs/md5:d41d8cd98f00b204e9800998ecf8427e", "x", 400)
		status(t, "GET", "/v1/blobs/"+digest, "", 404)
		status(t, "DELETE", "/v1/blobs/"+digest, "", 405)
		if c.HasBlob(ctx, addr, digest) {
			t.Fatal("HasBlob of a blob not there: true")
		}
		if _, err := c.GetBlob(ctx, addr, digest); err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("GetBlob of a blob not there: %v", err)
		}
		for _, tc := range []struct {
			err    error
			status int
		}{
			{blob.ErrDigestMismatch, 400}, {blob.ErrTooLarge, 413}, {blob.ErrNoSpace, 507}, {errors.New("disk on fire"), 500},
		} {
			blobs.takeErr = tc.err
			status(t, "PUT", "/v1/blobs/"+digest, "x", tc.status)
			if err := c.PushBlob(ctx, addr, digest, strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), tc.err.Error()) {
				t.Fatalf("a push refused with %v: %v", tc.err, err)
			}
		}
		blobs.takeErr = nil
	})

	t.Run("uploads", func(t *testing.T) {
		for _, tc := range []struct {
			err    error
			status int
		}{
			{blob.ErrUploadUnknown, 404}, {blob.ErrTooLarge, 413}, {blob.ErrDigestMismatch, 422},
			{blob.ErrNoSpace, 507}, {blob.ErrUnreplicated, 503},
		} {
			ups.err = tc.err
			status(t, "GET", "/v1/uploads/"+id, "", tc.status)
			if _, err := c.Upload(ctx, addr, id); !errors.Is(err, tc.err) {
				t.Fatalf("a refusal with %v came back as %v", tc.err, err)
			}
		}
		ups.err = nil
		status(t, "GET", "/v1/uploads/"+strings.Repeat("f", 32), "", 404)
		// The size the caller saw is a precondition.
		status(t, "PATCH", "/v1/uploads/"+id+"?max=0&offset=2", "x", 409)
		status(t, "PATCH", "/v1/uploads/"+id+"?max=0", "x", 409)
		if _, err := c.AppendUpload(ctx, addr, id, peerrpc.AppendRequest{Offset: 2}, strings.NewReader("x")); !errors.Is(err, peerrpc.ErrUploadChanged) {
			t.Fatalf("an append at a stale offset: %v, want ErrUploadChanged", err)
		}
		if _, err := c.CommitUpload(ctx, addr, id, peerrpc.CommitRequest{Offset: 4}); !errors.Is(err, peerrpc.ErrUploadChanged) {
			t.Fatalf("a commit at a stale offset: %v, want ErrUploadChanged", err)
		}
		if _, err := c.AppendUpload(ctx, addr, id, peerrpc.AppendRequest{Offset: 3, Max: 4}, strings.NewReader("xy")); !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("an append past the limit: %v, want ErrTooLarge", err)
		}
		status(t, "PUT", "/v1/uploads/"+id+"?offset=3", "", 405)
		status(t, "POST", "/v1/uploads/"+id+"?offset=3", "not json", 500)
		// A body that fails to read says why, not that the request failed.
		boom := errors.New("the chunk is shorter than its Content-Range")
		if _, err := c.AppendUpload(ctx, addr, id, peerrpc.AppendRequest{Offset: 3}, io.MultiReader(strings.NewReader("x"), errReader{boom})); !errors.Is(err, boom) {
			t.Fatalf("an append whose body fails: %v, want %v", err, boom)
		}
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestUnservedRoutes: a node that serves no blobs answers their routes
// 404, and a blob-only node has no leader routes.
func TestUnservedRoutes(t *testing.T) {
	h := peerrpc.Handler(peerrpc.Services{Leader: &fakeLeader{}})
	if code, _ := do(t, h, "GET", "/v1/blobs/"+digest, ""); code != 404 {
		t.Fatalf("blobs on a leader-only handler: %d", code)
	}
	if code, _ := do(t, h, "GET", "/v1/uploads/"+id, ""); code != 404 {
		t.Fatalf("uploads on a leader-only handler: %d", code)
	}
	h = peerrpc.Handler(peerrpc.Services{Blobs: &fakeBlobs{}})
	if code, _ := do(t, h, "GET", "/v1/index", ""); code != 404 {
		t.Fatalf("index on a blob-only handler: %d", code)
	}
}
