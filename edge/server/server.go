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
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
)

// Mount is one format served under one prefix.
type Mount struct {
	Prefix string
	Server *format.Server
}

// Server routes requests to the mounted formats, or to Other.
type Server struct {
	Mounts []Mount
	Cache  *cache.Cache
	// Other answers what no format serves (health, the API).
	Other fasthttp.RequestHandler
	// Forward sends a write to an origin and answers with the origin's
	// answer (see Forwarder); nil: writes are refused.
	Forward Forwarder
}

// Forwarder streams a request to an origin, writes the answer to ctx
// (waiting, after a successful write, until the node has applied it) and
// returns an error, with nothing written, when no origin could be reached.
type Forwarder func(ctx *fasthttp.RequestCtx) error

// Handle is the fasthttp handler.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	for _, m := range s.Mounts {
		if path == m.Prefix || strings.HasPrefix(path, m.Prefix+"/") {
			s.serve(ctx, m, path)
			return
		}
	}
	s.Other(ctx)
}

// header reads a fasthttp request's headers for format.Request.
type header struct{ h *fasthttp.RequestHeader }

func (h header) Get(key string) string { return string(h.h.Peek(key)) }

func (s *Server) serve(ctx *fasthttp.RequestCtx, m Mount, path string) {
	q, _ := url.ParseQuery(string(ctx.URI().QueryString()))
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	raw := string(ctx.URI().PathOriginal())
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if route, _, _ := m.Server.Route(string(ctx.Method()), strings.TrimPrefix(path, m.Prefix)); route != nil && route.Write != nil && s.Forward != nil {
		if err := s.Forward(ctx); err != nil {
			_ = s.write(ctx, m.Server.Format().Error(&format.Request{Method: string(ctx.Method()), Prefix: m.Prefix,
				Path: strings.TrimPrefix(path, m.Prefix), Header: header{&ctx.Request.Header}, Params: map[string]string{}},
				format.Errorf(apierr.Unavailable, "this edge node cannot reach an origin to write to; retry later").With(apierr.RetryAfter, 5)))
		}
		return
	}
	req := &format.Request{
		Method:        string(ctx.Method()),
		Prefix:        m.Prefix,
		Path:          strings.TrimPrefix(path, m.Prefix),
		RawPath:       strings.TrimPrefix(raw, m.Prefix),
		Query:         q,
		Header:        header{&ctx.Request.Header},
		Body:          bytes.NewReader(ctx.PostBody()),
		ContentLength: int64(ctx.Request.Header.ContentLength()),
		BaseURL:       scheme + string(ctx.Host()),
		RemoteAddr:    ctx.RemoteIP().String(),
		RequestID:     auth.NewID()[:16],
	}
	resp := m.Server.Serve(ctx, req)
	if err := s.write(ctx, resp); err != nil {
		ctx.Response.Reset()
		_ = s.write(ctx, m.Server.Fail(req, err))
	}
}

// Answer sends a format response outside the format paths (the REST
// download); see write.
func (s *Server) Answer(ctx *fasthttp.RequestCtx, resp *format.Response) error {
	return s.write(ctx, resp)
}

// write sends a response; a blob is opened from the cache. An error means
// nothing was written: the caller answers it in the format's shape.
func (s *Server) write(ctx *fasthttp.RequestCtx, resp *format.Response) error {
	for k, vs := range resp.Header {
		for i, v := range vs {
			if i == 0 {
				ctx.Response.Header.Set(k, v)
			} else {
				ctx.Response.Header.Add(k, v)
			}
		}
	}
	if resp.Blob == nil {
		ctx.SetStatusCode(cmpStatus(resp.Status))
		ctx.SetBody(resp.Body)
		return nil
	}
	b := resp.Blob
	r, err := s.Cache.Get(context.WithoutCancel(ctx), b.Digest)
	if err != nil {
		return blobErr(err, b)
	}
	if etag := resp.Header.Get("ETag"); etag != "" && etag == string(ctx.Request.Header.Peek("If-None-Match")) {
		r.Close()
		ctx.SetStatusCode(http.StatusNotModified)
		return nil
	}
	ctx.Response.Header.Set("Accept-Ranges", "bytes")
	if f, ok := r.(*os.File); ok {
		return serveFile(ctx, f, b.Size)
	}
	// A blob still arriving from the origin: all of it (a range would
	// wait for the whole), as it comes. The first byte is awaited here, so
	// a blob the origin cannot give is answered as an error, not as a
	// broken response.
	first := make([]byte, 1)
	if n, err := io.ReadFull(r, first); n == 0 && err != nil && (b.Size > 0 || !errors.Is(err, io.EOF)) {
		r.Close()
		return blobErr(err, b)
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetBodyStream(&readCloser{io.MultiReader(bytes.NewReader(first[:min(1, b.Size)]), r), r}, int(b.Size))
	return nil
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

// serveFile sends a cached blob, or the range of it asked for.
func serveFile(ctx *fasthttp.RequestCtx, f *os.File, size int64) error {
	rng := ctx.Request.Header.Peek("Range")
	if len(rng) == 0 {
		ctx.SetStatusCode(http.StatusOK)
		ctx.SetBodyStream(f, int(size)) // an *os.File: sendfile
		return nil
	}
	start, end, err := fasthttp.ParseByteRange(rng, int(size))
	if err != nil {
		f.Close()
		ctx.Response.Header.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		ctx.SetStatusCode(http.StatusRequestedRangeNotSatisfiable)
		return nil
	}
	if _, err := f.Seek(int64(start), io.SeekStart); err != nil {
		f.Close()
		return err
	}
	n := int64(end - start + 1)
	ctx.Response.Header.Set("Content-Range", "bytes "+strconv.Itoa(start)+"-"+strconv.Itoa(end)+"/"+strconv.FormatInt(size, 10))
	ctx.SetStatusCode(http.StatusPartialContent)
	ctx.SetBodyStream(&readCloser{io.LimitReader(f, n), f}, int(n))
	return nil
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// NotServed answers, in the API's error shape, a path the edge does not
// serve (yet).
func NotServed(ctx *fasthttp.RequestCtx, what string) {
	e := apierr.New(apierr.NotFound, "%s", what)
	ctx.SetStatusCode(e.Status())
	ctx.SetContentType("application/json")
	ctx.SetBody(apierr.Body(e))
}
