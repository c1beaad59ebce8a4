// Package server is the edge's HTTP transport on fasthttp: it turns each
// request into a format.Request, lets the format's Server (the same one
// the origin runs, over the edge's replica and without a write
// environment) answer it, and writes the answer, taking the blobs it
// names from the edge's cache (sendfile for a cached blob).
package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// Download is what a remembered answer downloads, and for whom (answers
// are remembered per credential).
type Download struct {
	Artifact *meta.Artifact
	Repo     *meta.Repository
	Who      meta.Actor
}

// Mount is one format served under one prefix.
type Mount struct {
	Prefix string
	Server *format.Server
}

// Server routes requests to the mounted formats, or to Other.
type Server struct {
	Mounts []Mount
	// Plugins, when set, finds the installed plugin serving a path no
	// mount serves (false: none, or its module is not loaded here).
	Plugins func(ctx context.Context, path string) (Mount, bool)
	Cache   *cache.Cache
	// Other answers what no format serves (health, the API).
	Other fasthttp.RequestHandler
	// Forward sends a write to an origin and answers with the origin's
	// answer (see Forwarder); nil: writes are refused.
	Forward Forwarder

	// Index, when set, is the replica's applied index: answers are then
	// remembered while it stays the same (see hot.go).
	Index func() uint64
	// CatchUp, when set, brings the replica to at least an index (a client
	// that wrote at an origin sends X-Depot-Min-Index with that write's
	// X-Depot-Index, and reads its write here); its error is the answer
	// 503 says to retry.
	CatchUp func(ctx context.Context, index uint64) error
	// Downloaded is told of each download answered from memory (one
	// answered in full tells Env.OnDownload), with the address of its
	// client; it must not keep remote, and should not allocate.
	Downloaded func(d *Download, remote net.IP)

	served  atomic.Int64
	hotOnce sync.Once
	hot     *hotAnswers
}

// Served counts the bytes of the bodies answered from this node (blobs
// and documents; not forwarded answers), for metrics.
func (s *Server) Served() int64 { return s.served.Load() }

func (s *Server) count(ctx *fasthttp.RequestCtx, n int64) {
	if !ctx.IsHead() {
		s.served.Add(n)
	}
}

// Forwarder streams a request to an origin, writes the answer to ctx
// (waiting, after a successful write, until the node has applied it) and
// returns an error, with nothing written, when no origin could be reached.
type Forwarder func(ctx *fasthttp.RequestCtx) error

// Handle is the fasthttp handler.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	// (A write goes to an origin, which honours the header itself.)
	if raw := ctx.Request.Header.Peek(minIndexHeader); len(raw) > 0 && s.CatchUp != nil && (ctx.IsGet() || ctx.IsHead()) && !s.fresh(ctx, raw) {
		return
	}
	again := false // seen lately: its answer is worth remembering
	if s.Index != nil {
		s.hotOnce.Do(func() { s.hot = newHot(s.Cache.Dir()) })
		if hotEligible(ctx) {
			var a *hotAnswer
			if a, again = s.hot.lookup(ctx, s.Index()); a != nil && s.hot.serve(s, ctx, a) {
				return
			}
		}
	}
	if m, ok := s.mount(ctx); ok {
		s.serve(ctx, m, again)
		return
	}
	s.Other(ctx)
}

const minIndexHeader = "X-Depot-Min-Index"

// ForwardedHeader marks a read the edge did not answer from its replica
// but had an origin answer (a repository not assigned to the node, a
// credential it does not hold).
const ForwardedHeader = "X-Depot-Forwarded"

// minIndexWait bounds how long a read waits for the replica to reach the
// index a client asks for (the origin waits an election's worth).
const minIndexWait = 5 * time.Second

// fresh brings the replica to the index a client asks for; when it
// cannot, it answers (400 for a malformed index, 503 after minIndexWait)
// in the shape of the path's format and returns false.
func (s *Server) fresh(ctx *fasthttp.RequestCtx, raw []byte) bool {
	want, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		s.fail(ctx, apierr.Invalid(minIndexHeader, "X-Depot-Min-Index must be a log index (a whole number), as X-Depot-Index gives it"))
		return false
	}
	if s.Index != nil && s.Index() >= want {
		return true
	}
	wctx, cancel := context.WithTimeout(context.Background(), minIndexWait)
	defer cancel()
	if err := s.CatchUp(wctx, want); err != nil {
		s.fail(ctx, apierr.New(apierr.Unavailable, "this edge node has applied the log up to %d, not yet %d; retry", s.Index(), want).With(apierr.RetryAfter, 1))
		return false
	}
	return true
}

// fail answers e in the shape of the format the path belongs to, or the
// REST API's.
func (s *Server) fail(ctx *fasthttp.RequestCtx, e *apierr.Error) {
	if m, ok := s.mount(ctx); ok && s.Write(ctx, m.Server.Format().Error(mountRequest(ctx, m), e)) == nil {
		return
	}
	APIError(ctx, e)
}

// mount is the format serving ctx's path, if any.
func (s *Server) mount(ctx *fasthttp.RequestCtx) (Mount, bool) {
	path := string(ctx.Path())
	for _, m := range s.Mounts {
		if path == m.Prefix || strings.HasPrefix(path, m.Prefix+"/") {
			return m, true
		}
	}
	if s.Plugins != nil {
		return s.Plugins(ctx, path)
	}
	return Mount{}, false
}

// mountRequest is ctx as m's format sees it, below m's prefix.
func mountRequest(ctx *fasthttp.RequestCtx, m Mount) *format.Request {
	req := Request(ctx)
	req.Prefix, req.Path, req.RawPath = m.Prefix, strings.TrimPrefix(req.Path, m.Prefix), strings.TrimPrefix(req.RawPath, m.Prefix)
	return req
}

// header reads a fasthttp request's headers for format.Request, and
// keeps the names of those it was asked for: everything of the request's
// headers that decided its answer (see hot.go).
type header struct {
	h    *fasthttp.RequestHeader
	mu   sync.Mutex
	read []string // canonical names, once each
}

func (h *header) Get(key string) string {
	name := http.CanonicalHeaderKey(key)
	h.mu.Lock()
	if !slices.Contains(h.read, name) {
		h.read = append(h.read, name)
	}
	h.mu.Unlock()
	return string(h.h.Peek(key))
}

// names are the headers the request's handling read (it is over).
func (h *header) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.read
}

// Request is ctx as a format sees it, below no prefix yet.
func Request(ctx *fasthttp.RequestCtx) *format.Request {
	q, _ := url.ParseQuery(string(ctx.URI().QueryString()))
	raw, _, _ := strings.Cut(string(ctx.URI().PathOriginal()), "?")
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	return &format.Request{
		Method:        string(ctx.Method()),
		Path:          string(ctx.Path()),
		RawPath:       raw,
		Query:         q,
		Header:        &header{h: &ctx.Request.Header},
		Body:          body(ctx),
		ContentLength: int64(ctx.Request.Header.ContentLength()),
		BaseURL:       scheme + string(ctx.Host()),
		RemoteAddr:    ctx.RemoteIP().String(),
		RequestID:     httpx.NewRequestID(),
	}
}

// body is the request's body as a stream, never read here: a body the
// edge forwards goes on to the origin as it arrives.
func body(ctx *fasthttp.RequestCtx) io.Reader {
	if s := ctx.RequestBodyStream(); s != nil {
		return s
	}
	return bytes.NewReader(ctx.Request.Body())
}

// serve answers a request under m's prefix: a write route goes to an
// origin (Forward), anything else to the format's Server; an answer is
// remembered when remember says so.
func (s *Server) serve(ctx *fasthttp.RequestCtx, m Mount, remember bool) {
	req := mountRequest(ctx, m)
	if route, _, _ := m.Server.Route(req.Method, req.Path); route != nil && route.Write != nil && s.Forward != nil {
		if err := s.Forward(ctx); err != nil {
			_ = s.Write(ctx, m.Server.Format().Error(req, format.Errorf(apierr.Unavailable,
				"this edge node cannot reach an origin to write to; retry later").With(apierr.RetryAfter, 5)))
		}
		return
	}
	var index uint64
	if s.hot != nil {
		index = s.Index() // before the answer is decided from the replica
	}
	resp := m.Server.Serve(ctx, req)
	if resp.Upstream && s.Forward != nil && s.Forward(ctx) == nil {
		ctx.Response.Header.Set(ForwardedHeader, "origin")
		return
	}
	fromFile, err := s.write(ctx, resp)
	if err != nil {
		ctx.Response.Reset()
		_ = s.Write(ctx, m.Server.Fail(req, err))
		return
	}
	// remember: the request was seen lately, so s.hot is there and the
	// request eligible.
	if remember && cmpStatus(resp.Status) == http.StatusOK && !resp.Abort && (resp.Blob == nil || fromFile) {
		a := &hotAnswer{index: index}
		if req.Downloaded != nil {
			a.download = &Download{Artifact: req.Downloaded, Repo: req.Repo, Who: req.Principal.Actor()}
		}
		if resp.Blob != nil {
			a.size = resp.Blob.Size
			key, rel, err := cache.File(resp.Blob.Digest)
			if err != nil {
				return
			}
			a.blobKey, a.blobFile = key, []byte(rel)
		} else {
			a.body, a.size = resp.Body, int64(len(resp.Body))
		}
		if h, ok := req.Header.(*header); ok {
			s.hot.remember(ctx, a, h.names())
		}
	}
}

// Write sends a format response; a blob is opened from the cache. An
// error means nothing was written: the caller answers it in the format's
// shape.
func (s *Server) Write(ctx *fasthttp.RequestCtx, resp *format.Response) error {
	_, err := s.write(ctx, resp)
	return err
}

// write is Write, saying whether a blob went whole from its cached file.
func (s *Server) write(ctx *fasthttp.RequestCtx, resp *format.Response) (fromFile bool, err error) {
	for k, vs := range resp.Header {
		for i, v := range vs {
			if i == 0 {
				ctx.Response.Header.Set(k, v)
			} else {
				ctx.Response.Header.Add(k, v)
			}
		}
	}
	// Absolute URLs are built from the request's Host here (see Request):
	// the answer varies on it, as the origin's do when no external URL is
	// set, besides what the format varies on (Accept). One value, so a
	// remembered answer (hot.go) keeps it whole.
	if vs := resp.Header.Values("Vary"); len(vs) > 0 {
		ctx.Response.Header.Set("Vary", httpx.MergeVary(append([]string{httpx.VaryBaseURL}, vs...)...))
	} else {
		ctx.Response.Header.Set("Vary", httpx.VaryBaseURL)
	}
	if resp.Blob == nil {
		ctx.SetStatusCode(cmpStatus(resp.Status))
		if resp.Reason != "" {
			ctx.Response.Header.SetStatusMessage([]byte(resp.Reason))
		}
		ctx.SetBody(resp.Body)
		s.count(ctx, int64(len(resp.Body)))
		return false, nil
	}
	b := resp.Blob
	r, err := s.Cache.Get(context.WithoutCancel(ctx), b.Digest)
	if err != nil {
		return false, blobErr(err, b)
	}
	if !resp.ModTime.IsZero() {
		ctx.Response.Header.Set("Last-Modified", resp.ModTime.UTC().Format(http.TimeFormat))
	}
	if notModified(ctx, resp) {
		r.Close()
		// As net/http answers it on the origin: no entity headers, and
		// no date when there is a tag.
		ctx.Response.Header.Del("Content-Type")
		if resp.Header.Get("ETag") != "" {
			ctx.Response.Header.Del("Last-Modified")
		}
		ctx.SetStatusCode(http.StatusNotModified)
		return false, nil
	}
	ctx.Response.Header.Set("Accept-Ranges", "bytes")
	if f, ok := r.(*cache.Blob); ok {
		n, err := serveFile(ctx, f, b.Size)
		s.count(ctx, n)
		return err == nil && n == b.Size, err
	}
	// A blob still arriving from the origin: all of it (a range would
	// wait for the whole), as it comes. The first byte is awaited here, so
	// a blob the origin cannot give is answered as an error, not as a
	// broken response.
	var first []byte
	if b.Size > 0 {
		first = make([]byte, 1)
		if _, err := io.ReadFull(r, first); err != nil {
			r.Close()
			return false, blobErr(err, b)
		}
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetBodyStream(&readCloser{io.MultiReader(bytes.NewReader(first), r), r}, int(b.Size))
	s.count(ctx, b.Size)
	return false, nil
}

func blobErr(err error, b *format.BlobRef) error {
	if errors.Is(err, blob.ErrNotFound) && b.Missing != nil {
		return b.Missing
	}
	return err
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r *readCloser) Close() error { return r.c.Close() }

// serveFile sends a cached blob, or the range of it asked for, and says
// how many bytes of it go.
func serveFile(ctx *fasthttp.RequestCtx, f *cache.Blob, size int64) (int64, error) {
	rng := ctx.Request.Header.Peek("Range")
	if len(rng) == 0 {
		ctx.SetStatusCode(http.StatusOK)
		ctx.SetBodyStream(f, int(size)) // sendfile
		return size, nil
	}
	start, end, err := fasthttp.ParseByteRange(rng, int(size))
	if err != nil {
		f.Close()
		// As net/http answers it on the origin: the entity's validators go.
		for _, h := range []string{"ETag", "Last-Modified", "Cache-Control", "Content-Encoding", "Accept-Ranges"} {
			ctx.Response.Header.Del(h)
		}
		ctx.Response.Header.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetStatusCode(http.StatusRequestedRangeNotSatisfiable)
		ctx.SetBodyString("invalid range: failed to overlap\n")
		return 0, nil
	}
	if _, err := f.Seek(int64(start), io.SeekStart); err != nil {
		f.Close()
		return 0, err
	}
	n := int64(end - start + 1)
	ctx.Response.Header.Set("Content-Range", "bytes "+strconv.Itoa(start)+"-"+strconv.Itoa(end)+"/"+strconv.FormatInt(size, 10))
	ctx.SetStatusCode(http.StatusPartialContent)
	ctx.SetBodyStream(&readCloser{io.LimitReader(f, n), f}, int(n))
	return n, nil
}

// notModified applies a conditional GET or HEAD (RFC 9110 13.2.2): a tag
// that matches, or, when no tag was sent, a date not older than the
// blob's.
func notModified(ctx *fasthttp.RequestCtx, resp *format.Response) bool {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 {
		return format.ETagMatches(string(inm), resp.Header.Get("ETag")) // as http.ServeContent matches at the origin
	}
	ims := ctx.Request.Header.Peek("If-Modified-Since")
	if len(ims) == 0 || resp.ModTime.IsZero() {
		return false
	}
	t, err := http.ParseTime(string(ims))
	return err == nil && !resp.ModTime.Truncate(time.Second).After(t)
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// NotServed answers, in the API's error shape, a path the edge does not
// serve.
func NotServed(ctx *fasthttp.RequestCtx, what string) {
	APIError(ctx, apierr.New(apierr.NotFound, "%s", what))
}

// APIError answers in the REST API's error shape, as the origin does: a
// 401 challenges, an error that says when to retry says Retry-After.
func APIError(ctx *fasthttp.RequestCtx, e *apierr.Error) {
	ctx.Response.Reset()
	ctx.Response.Header.Set("Vary", httpx.VaryBaseURL) // as the origin says of every answer (see write)
	if e.Status() == http.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="Depot"`)
	}
	if secs, ok := e.RetryAfterSeconds(); ok {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
	}
	ctx.SetStatusCode(e.Status())
	ctx.SetContentType("application/json")
	ctx.SetBody(apierr.Body(e))
}
