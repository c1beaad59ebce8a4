package server

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Remembered answers: the hot path of an edge. A GET or HEAD answered 200
// with a cached blob or a small document is remembered under everything
// of the request that decided it: scheme, method, URI and host, and every
// request header the answer's handling read (authentication's credential,
// whichever header carried it: Authorization, NuGet's X-NuGet-ApiKey, or
// any a format reads in the future; Accept where a format negotiates),
// present or absent, each value kept as a keyed digest, never as
// presented, with the replica's applied index then. A handler is a
// function of what it read, so a request that agrees on all of it gets
// the same answer: it is answered again from memory, the blob from its
// file (fasthttp.FS: open files kept, sendfile), with no parsing,
// authentication or store read, for as long as the replica has applied
// nothing new and for at most hotTTL (a credential that expires by the
// clock is honoured at most that long after). Any change the replica
// applies (a revoked token, a deleted version, a new grant) ends every
// remembered answer at once. Conditional and Range requests take the
// full path. An answer is remembered only when its request was seen
// within the last second or so already (hotSeen): remembering costs more
// than the answer it saves, and a working set of many blobs asked for by
// many credentials rarely repeats a request within the TTL.

const (
	hotTTL       = time.Second
	hotMaxDoc    = 256 << 10 // documents larger than this are not remembered
	hotMaxBytes  = 64 << 20  // document bytes remembered in all
	hotMaxAnswer = 10000     // answers remembered
	hotMaxVary   = 8         // an answer whose handling read more headers is not remembered
	hotSeen      = 1 << 15   // slots of the table of requests seen lately
)

type hotAnswer struct {
	key      []byte // the key's parts (hotKey), NUL-separated
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
	seed     maphash.Seed
	valSeeds [2]maphash.Seed
	files    fasthttp.RequestHandler // serves blob files from the cache's directory
	// seen and seenAt are the requests seen lately, by their key's hash
	// (one per slot; a collision only costs a remembering).
	seen    [hotSeen]atomic.Uint64
	seenAt  [hotSeen]atomic.Int64 // unix seconds
	mu      sync.RWMutex
	answers map[uint64]*hotAnswer
	vary    map[uint64][][]byte // per scheme, method, URI and host: the headers the last remembered answer's handling read
	bytes   int
}

// hotServing is the user value naming the answer being served, for the
// file server's PathRewrite.
type hotServing struct{}

func newHot(dir string) *hotAnswers {
	fs := &fasthttp.FS{Root: dir, AllowEmptyRoot: true, CacheDuration: 10 * time.Second,
		PathRewrite:  func(ctx *fasthttp.RequestCtx) []byte { return ctx.UserValue(hotServing{}).(*hotAnswer).blobFile },
		PathNotFound: func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusNotFound) }}
	return &hotAnswers{seed: maphash.MakeSeed(), valSeeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		files: fs.NewRequestHandler(), answers: map[uint64]*hotAnswer{}, vary: map[uint64][][]byte{}}
}

// hotKey is what an answer is remembered under: the request's scheme,
// method, URI and host, then the name of each header its handling read
// and a keyed 128-bit digest of the value it has in the request.
type hotKey struct {
	base    [4][]byte
	names   [][]byte
	digests [hotMaxVary][16]byte
}

// setBase sets the key's first parts: absolute URLs in documents are
// made of the scheme and the host.
func (k *hotKey) setBase(ctx *fasthttp.RequestCtx) {
	hd := &ctx.Request.Header
	scheme := schemeHTTP
	if ctx.IsTLS() {
		scheme = schemeHTTPS
	}
	k.base = [4][]byte{scheme, hd.Method(), hd.RequestURI(), hd.Host()}
}

// varied adds each named header's digest (of "" when absent).
func (h *hotAnswers) varied(ctx *fasthttp.RequestCtx, k *hotKey, names [][]byte) {
	k.names = names
	for i, name := range names {
		v := ctx.Request.Header.PeekBytes(name)
		binary.LittleEndian.PutUint64(k.digests[i][:8], maphash.Bytes(h.valSeeds[0], v))
		binary.LittleEndian.PutUint64(k.digests[i][8:], maphash.Bytes(h.valSeeds[1], v))
	}
}

var schemeHTTP, schemeHTTPS = []byte("http"), []byte("https")

// hotEligible: a GET or HEAD that is not conditional and not a range.
func hotEligible(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	return (h.IsGet() || h.IsHead()) && len(h.Peek("Range")) == 0 && len(h.Peek("If-None-Match")) == 0 &&
		len(h.Peek("If-Modified-Since")) == 0 && len(h.Peek("If-Range")) == 0
}

// hash hashes the key's base alone, or with its varied headers.
func (h *hotAnswers) hash(k *hotKey, withVaried bool) uint64 {
	var mh maphash.Hash
	mh.SetSeed(h.seed)
	for _, p := range k.base {
		_, _ = mh.Write(p)
		_ = mh.WriteByte(0)
	}
	if withVaried {
		for i, name := range k.names {
			_, _ = mh.Write(name)
			_ = mh.WriteByte(0)
			_, _ = mh.Write(k.digests[i][:])
			_ = mh.WriteByte(0)
		}
	}
	return mh.Sum64()
}

func (a *hotAnswer) matches(k *hotKey) bool {
	key := a.key
	next := func(p []byte) bool {
		if len(key) < len(p)+1 || !bytes.Equal(key[:len(p)], p) || key[len(p)] != 0 {
			return false
		}
		key = key[len(p)+1:]
		return true
	}
	for _, p := range k.base {
		if !next(p) {
			return false
		}
	}
	for i, name := range k.names {
		if !next(name) || !next(k.digests[i][:]) {
			return false
		}
	}
	return len(key) == 0
}

// key fills k for ctx with the headers remembered answers at its URL
// vary on, and returns its hash.
func (h *hotAnswers) key(ctx *fasthttp.RequestCtx, k *hotKey) uint64 {
	k.setBase(ctx)
	h.mu.RLock()
	names := h.vary[h.hash(k, false)]
	h.mu.RUnlock()
	h.varied(ctx, k, names)
	return h.hash(k, true)
}

// lookup finds the answer remembered for ctx, still good at index, and
// says whether the request was seen lately (its answer is then worth
// remembering).
func (h *hotAnswers) lookup(ctx *fasthttp.RequestCtx, index uint64) (*hotAnswer, bool) {
	var k hotKey
	sum := h.key(ctx, &k)
	h.mu.RLock()
	a := h.answers[sum]
	h.mu.RUnlock()
	if a != nil && a.matches(&k) && (a.index != index || ctx.Time().UnixNano() >= a.until) {
		return nil, true // remembered for this very request, but stale: worth remembering again
	}
	if a == nil || !a.matches(&k) {
		slot, now := sum&(hotSeen-1), ctx.Time().Unix()
		again := h.seen[slot].Load() == sum && now-h.seenAt[slot].Load() <= int64(hotTTL/time.Second)
		h.seen[slot].Store(sum)
		h.seenAt[slot].Store(now)
		return nil, again
	}
	return a, true
}

func (h *hotAnswers) forget(ctx *fasthttp.RequestCtx) {
	var k hotKey
	sum := h.key(ctx, &k)
	h.mu.Lock()
	if a := h.answers[sum]; a != nil {
		h.bytes -= len(a.body)
		delete(h.answers, sum)
	}
	h.mu.Unlock()
}

// remember keeps the answer just written to ctx, whose handling read the
// request headers named read (canonical names).
func (h *hotAnswers) remember(ctx *fasthttp.RequestCtx, a *hotAnswer, read []string) {
	if len(a.body) > hotMaxDoc || len(read) > hotMaxVary {
		return
	}
	names := make([][]byte, len(read))
	for i, n := range read {
		names[i] = []byte(n)
	}
	var k hotKey
	k.setBase(ctx)
	base := h.hash(&k, false)
	h.varied(ctx, &k, names)
	for _, p := range k.base {
		a.key = append(append(a.key, p...), 0)
	}
	for i, name := range k.names {
		a.key = append(append(a.key, name...), 0)
		a.key = append(append(a.key, k.digests[i][:]...), 0)
	}
	for k, v := range ctx.Response.Header.All() {
		switch string(k) {
		case fasthttp.HeaderContentLength, fasthttp.HeaderDate, fasthttp.HeaderServer, fasthttp.HeaderConnection, fasthttp.HeaderTransferEncoding:
			continue
		}
		a.header = append(a.header, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
	}
	a.until = ctx.Time().Add(hotTTL).UnixNano()
	sum := h.hash(&k, true)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.vary) >= hotMaxAnswer {
		clear(h.vary) // the answers keyed with them stay, unreachable until replaced
	}
	h.vary[base] = names
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
