package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// hotSite is an edge server that remembers answers, over a store holding
// one generic file, with the origin's blob store behind its cache.
type hotSite struct {
	e         *formattest.Env
	s         *server.Server
	fetches   atomic.Int64
	downloads atomic.Int64
	path      string
	data      []byte
}

func newHotSite(t testing.TB) *hotSite {
	e := formattest.New(t)
	e.Repo("files", generic.Name)
	node := e.Node(func(env *format.Env) []format.Format { return []format.Format{generic.New(env)} })
	h := &hotSite{e: e, path: "/generic/files/tool/1.0/tool.bin", data: bytes.Repeat([]byte("x"), 1024)}
	if code, out := e.Do("PUT", node.URL+h.path, "application/octet-stream", h.data); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, out)
	}
	h.s = edge(t, e, func(ctx context.Context, d string, _ int64) (io.ReadCloser, error) {
		h.fetches.Add(1)
		f, err := e.Blobs.Open(ctx, d)
		if err != nil {
			return nil, err
		}
		return f, nil
	})
	h.s.Index, h.s.Downloaded = e.Store.LastApplied, func(d *server.Download, remote net.IP) {
		if d.Artifact == nil || d.Repo == nil || d.Who.Username == "" || len(remote) == 0 {
			t.Errorf("a remembered download without its artifact, repository, user or client: %+v %v", d, remote)
		}
		h.downloads.Add(1)
	}
	return h
}

// TestRememberedAnswers: a repeated GET is answered from memory with the
// same status, headers and bytes, and still counts as a download; any
// change the replica applies (here: the token revoked) ends it at once;
// a blob gone from the cache is fetched again, not answered from a stale
// memory.
func TestRememberedAnswers(t *testing.T) {
	h := newHotSite(t)
	if miss := full(h.s, h.e.Token, "GET", h.path); miss.status != 200 || h.fetches.Load() != 1 { // streamed as it arrives
		t.Fatalf("a miss: %d, %d fetches", miss.status, h.fetches.Load())
	}
	first := full(h.s, h.e.Token, "GET", h.path)
	second := full(h.s, h.e.Token, "GET", h.path)
	if first.status != 200 || !bytes.Equal(first.body, h.data) || second.status != 200 || !bytes.Equal(second.body, h.data) {
		t.Fatalf("answers: %d %d", first.status, second.status)
	}
	for _, k := range []string{"Content-Type", "ETag", "Last-Modified", "Content-Length", "X-Checksum-Sha256", "Accept-Ranges"} {
		if first.header.Get(k) != second.header.Get(k) || first.header.Get(k) == "" {
			t.Errorf("%s: %q answered in full, %q from memory", k, first.header.Get(k), second.header.Get(k))
		}
	}
	if h.downloads.Load() != 1 || h.fetches.Load() != 1 { // answered in full: OnDownload (not wired here); from memory: Downloaded
		t.Errorf("downloads counted from memory: %d, want 1", h.downloads.Load())
	}
	if head := full(h.s, h.e.Token, "HEAD", h.path); head.status != 200 || len(head.body) != 0 || head.header.Get("Content-Length") != "1024" {
		t.Errorf("HEAD: %d %q %q", head.status, head.body, head.header.Get("Content-Length"))
	}

	// The token revoked: refused at once.
	var tokID string
	_ = h.e.Store.View(func(tx *meta.Tx) error {
		t, err := tx.TokenByHash(auth.HashAPIToken(h.e.Token))
		if err == nil {
			tokID = t.ID
		}
		return err
	})
	if _, err := h.e.Apply(context.Background(), &meta.TokenRevoke{ID: tokID, UserID: "admin"}); err != nil {
		t.Fatal(err)
	}
	if got := full(h.s, h.e.Token, "GET", h.path); got.status != 401 {
		t.Fatalf("a revoked token, answered from memory: %d", got.status)
	}
}

// TestRememberedOnSecondSight: an answer is remembered only for a request
// seen lately already; one asked for once is not kept (a working set of
// many blobs and credentials rarely repeats a request within a second).
func TestRememberedOnSecondSight(t *testing.T) {
	h := newHotSite(t)
	full(h.s, h.e.Token, "GET", h.path) // into the cache
	other := h.path + "?build=7"        // another request, the same answer
	for i, want := range []int64{0, 0, 1, 2} {
		if got := full(h.s, h.e.Token, "GET", other); got.status != 200 || !bytes.Equal(got.body, h.data) {
			t.Fatalf("request %d: %d", i+1, got.status)
		}
		if n := h.downloads.Load(); n != want {
			t.Fatalf("after request %d: %d answered from memory, want %d", i+1, n, want)
		}
	}
}

// TestRememberedAgainWhenStale: an answer remembered for a request and
// gone stale (its second passed) is remembered again at the next sight of
// that request, however long ago the request was first seen. Served over
// a real listener: a request's time is the server's.
func TestRememberedAgainWhenStale(t *testing.T) {
	h := newHotSite(t)
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: h.s.Handle}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	get := func() {
		t.Helper()
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://edge.example" + h.path)
		req.Header.Set("Authorization", "Basic "+authHeader("admin", h.e.Token))
		if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 || !bytes.Equal(resp.Body(), h.data) {
			t.Fatalf("GET: %v %d", err, resp.StatusCode())
		}
	}
	get()
	get() // seen lately: remembered
	get() // from memory
	if n := h.downloads.Load(); n != 1 {
		t.Fatalf("%d answered from memory, want 1", n)
	}
	time.Sleep(2100 * time.Millisecond) // the answer, and the request's first sight, are older than a second
	get()                               // stale: answered in full, and remembered again
	get()                               // from memory
	if n := h.downloads.Load(); n != 2 {
		t.Fatalf("after the remembered answer went stale: %d answered from memory, want 2", n)
	}
}

type fullAnswer struct {
	status int
	header http.Header
	body   []byte
}

// full runs a request and reads everything of the answer.
func full(s *server.Server, token, method, path string) fullAnswer {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetHost("edge.example")
	ctx.Request.Header.Set("Authorization", "Basic "+authHeader("admin", token))
	s.Handle(&ctx)
	a := fullAnswer{status: ctx.Response.StatusCode(), header: http.Header{}}
	for k, v := range ctx.Response.Header.All() {
		a.header.Add(string(k), string(v))
	}
	if method != "HEAD" {
		var body bytes.Buffer
		_ = ctx.Response.BodyWriteTo(&body)
		a.body = body.Bytes()
	}
	if a.header.Get("Content-Length") == "" {
		a.header.Set("Content-Length", strconv.Itoa(ctx.Response.Header.ContentLength()))
	}
	ctx.Response.Reset() // closes a body stream
	return a
}

// BenchmarkHotBlobGET is the edge's handler path for a cached blob asked
// for again with the same credentials: answered from memory, the file by
// fasthttp.FS. Run with -benchmem: it allocates nothing.
func BenchmarkHotBlobGET(b *testing.B) {
	h := newHotSite(b)
	get := h.hotGET(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		get()
	}
}

// hotGET is a GET of the site's blob, repeated on one request context as
// fasthttp's server reuses it, warmed (a miss, from the file, from
// memory) so what follows is answered from memory.
func (h *hotSite) hotGET(t testing.TB) func() {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(h.path)
	ctx.Request.Header.SetHost("edge.example")
	ctx.Request.Header.Set("Authorization", "Basic "+authHeader("admin", h.e.Token))
	get := func() {
		h.s.Handle(&ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("status %d", ctx.Response.StatusCode())
		}
		_ = ctx.Response.BodyWriteTo(io.Discard)
		ctx.Response.Reset()
	}
	for range 3 {
		get()
	}
	return get
}

// TestHotBlobAllocatesNothing holds BenchmarkHotBlobGET's figure: a
// cached blob asked for again costs no allocation (the race detector's
// own bookkeeping allocates, so it is checked without it).
func TestHotBlobAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	get := newHotSite(t).hotGET(t)
	if n := testing.AllocsPerRun(1000, get); n != 0 {
		t.Fatalf("%v allocations per remembered blob GET", n)
	}
}
