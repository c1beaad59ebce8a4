package server

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Remembered answers: the hot path of an edge. A GET or HEAD answered 200
// with a cached blob or a small document is remembered under everything
// of the request that decided it (scheme, method, URI, host, Accept and
// the credential, kept as a keyed digest, never as presented), with the
// replica's applied index then. The same request is
// answered again from memory, the blob from its file (fasthttp.FS: open
// files kept, sendfile), with no parsing, authentication or store read,
// for as long as the replica has applied nothing new and for at most
// hotTTL (a credential that expires by the clock is honoured at most
// that long after). Any change the replica applies (a revoked token, a
// deleted version, a new grant) ends every remembered answer at once.
// Conditional and Range requests take the full path.

const (
	hotTTL       = time.Second
	hotMaxDoc    = 256 << 10 // documents larger than this are not remembered
	hotMaxBytes  = 64 << 20  // document bytes remembered in all
	hotMaxAnswer = 10000     // answers remembered
)

type hotAnswer struct {
	key      []byte // scheme, method, URI, host, credential digest, Accept, NUL-separated
	index    uint64 // the replica's applied index when it was answered
	until    int64  // unix nanos
	header   [][2][]byte
	body     []byte // a document
	blobKey  string // a blob: its cache key
	blobFile []byte // and its file under the cache's directory
	size     int64
	download *Download // set when it counts as a download
}

type hotAnswers struct {
	seed      maphash.Seed
	credSeeds [2]maphash.Seed
	files     fasthttp.RequestHandler // serves blob files from the cache's directory
	mu        sync.RWMutex
	answers   map[uint64]*hotAnswer
	bytes     int
}

// hotServing is the user value naming the answer being served, for the
// file server's PathRewrite.
type hotServing struct{}

func newHot(dir string) *hotAnswers {
	fs := &fasthttp.FS{Root: dir, AllowEmptyRoot: true, CacheDuration: 10 * time.Second,
		PathRewrite:  func(ctx *fasthttp.RequestCtx) []byte { return ctx.UserValue(hotServing{}).(*hotAnswer).blobFile },
		PathNotFound: func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusNotFound) }}
	return &hotAnswers{seed: maphash.MakeSeed(), credSeeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		files: fs.NewRequestHandler(), answers: map[uint64]*hotAnswer{}}
}

// hotParts are the parts of a request an answer depends on: absolute
// URLs in documents are made of the scheme and the host. The credential
// is kept as a keyed 128-bit digest (cred), never as presented.
func (h *hotAnswers) hotParts(ctx *fasthttp.RequestCtx, cred *[16]byte) [6][]byte {
	hd := &ctx.Request.Header
	scheme := schemeHTTP
	if ctx.IsTLS() {
		scheme = schemeHTTPS
	}
	auth := hd.Peek("Authorization")
	binary.LittleEndian.PutUint64(cred[:8], maphash.Bytes(h.credSeeds[0], auth))
	binary.LittleEndian.PutUint64(cred[8:], maphash.Bytes(h.credSeeds[1], auth))
	return [6][]byte{scheme, hd.Method(), hd.RequestURI(), hd.Host(), cred[:], hd.Peek("Accept")}
}

var schemeHTTP, schemeHTTPS = []byte("http"), []byte("https")

// hotEligible: a GET or HEAD that is not conditional and not a range.
func hotEligible(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	return (h.IsGet() || h.IsHead()) && len(h.Peek("Range")) == 0 && len(h.Peek("If-None-Match")) == 0 &&
		len(h.Peek("If-Modified-Since")) == 0 && len(h.Peek("If-Range")) == 0
}

func (h *hotAnswers) hash(parts *[6][]byte) uint64 {
	var mh maphash.Hash
	mh.SetSeed(h.seed)
	for _, p := range parts {
		_, _ = mh.Write(p)
		_ = mh.WriteByte(0)
	}
	return mh.Sum64()
}

func (a *hotAnswer) matches(parts *[6][]byte) bool {
	k := a.key
	for _, p := range parts {
		if len(k) < len(p)+1 || !bytes.Equal(k[:len(p)], p) || k[len(p)] != 0 {
			return false
		}
		k = k[len(p)+1:]
	}
	return len(k) == 0
}

// lookup finds the answer remembered for ctx, still good at index.
func (h *hotAnswers) lookup(ctx *fasthttp.RequestCtx, index uint64) *hotAnswer {
	var cred [16]byte
	parts := h.hotParts(ctx, &cred)
	sum := h.hash(&parts)
	h.mu.RLock()
	a := h.answers[sum]
	h.mu.RUnlock()
	if a == nil || a.index != index || ctx.Time().UnixNano() >= a.until || !a.matches(&parts) {
		return nil
	}
	return a
}

func (h *hotAnswers) forget(ctx *fasthttp.RequestCtx) {
	var cred [16]byte
	parts := h.hotParts(ctx, &cred)
	sum := h.hash(&parts)
	h.mu.Lock()
	if a := h.answers[sum]; a != nil {
		h.bytes -= len(a.body)
		delete(h.answers, sum)
	}
	h.mu.Unlock()
}

// remember keeps the answer just written to ctx.
func (h *hotAnswers) remember(ctx *fasthttp.RequestCtx, a *hotAnswer) {
	if len(a.body) > hotMaxDoc {
		return
	}
	var cred [16]byte
	parts := h.hotParts(ctx, &cred)
	for _, p := range parts {
		a.key = append(append(a.key, p...), 0)
	}
	for k, v := range ctx.Response.Header.All() {
		switch string(k) {
		case fasthttp.HeaderContentLength, fasthttp.HeaderDate, fasthttp.HeaderServer, fasthttp.HeaderConnection, fasthttp.HeaderTransferEncoding:
			continue
		}
		a.header = append(a.header, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
	}
	a.until = ctx.Time().Add(hotTTL).UnixNano()
	sum := h.hash(&parts)
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.answers[sum]; old != nil {
		h.bytes -= len(old.body)
		delete(h.answers, sum)
	}
	for k, old := range h.answers { // full: any answers go, the stale first seen
		if len(h.answers) < hotMaxAnswer && h.bytes+len(a.body) <= hotMaxBytes {
			break
		}
		h.bytes -= len(old.body)
		delete(h.answers, k)
	}
	h.answers[sum] = a
	h.bytes += len(a.body)
}

// serve writes a remembered answer: false when its blob has left the
// cache (the request then takes the full path).
func (h *hotAnswers) serve(s *Server, ctx *fasthttp.RequestCtx, a *hotAnswer) bool {
	if a.blobFile != nil {
		if !s.Cache.Hit(a.blobKey) {
			h.forget(ctx)
			return false
		}
		ctx.SetUserValue(hotServing{}, a)
		h.files(ctx)
		ctx.RemoveUserValue(hotServing{})
		if ctx.Response.StatusCode() != fasthttp.StatusOK {
			h.forget(ctx)
			ctx.Response.Reset()
			return false
		}
		// The answer's own headers, not the file's date.
		ctx.Response.Header.Del(fasthttp.HeaderLastModified)
		a.setHeaders(ctx)
	} else {
		a.setHeaders(ctx)
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.Response.SetBodyRaw(a.body)
	}
	s.count(ctx, a.size)
	if a.download != nil && s.Downloaded != nil {
		s.Downloaded(a.download, ctx.RemoteIP())
	}
	return true
}

// setHeaders writes the remembered headers. Their names came from a
// response header, so they are canonical already: no normalising again.
func (a *hotAnswer) setHeaders(ctx *fasthttp.RequestCtx) {
	for _, kv := range a.header {
		ctx.Response.Header.SetCanonical(kv[0], kv[1])
	}
}
