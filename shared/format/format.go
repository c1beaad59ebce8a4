// Package format is the contract between the transports and the
// package-format handlers. A Format declares routes; each route is marked
// Read or Write and handles a transport-neutral Request, so the same read
// routes can be served by the origin (net/http) and by edges (fasthttp).
package format

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Op says whether a route only reads (edges serve it locally) or writes
// (edges forward it to the origin).
type Op int

// Route operations.
const (
	Read Op = iota
	Write
)

// Handler serves one route.
type Handler func(ctx context.Context, r *Request) (*Response, error)

// Route is one path of a format, relative to the format's prefix.
// Path segments are literals, "{name}" (one segment) or, last, "{name...}"
// (the rest of the path). A GET route also answers HEAD.
// Formats whose paths a pattern cannot express (an OCI name holds
// slashes) give Match instead of Path.
type Route struct {
	Method string
	Path   string
	Match  func(path string) (map[string]string, bool)
	Op     Op
	Handle Handler
}

// Format is one package format.
type Format interface {
	Name() string   // repository format identifier, e.g. "generic"
	Prefix() string // URL prefix, e.g. "/generic"; see Prefixes for aliases
	Routes() []Route
	// Error renders err in the client's native shape; a 401 carries the
	// format's WWW-Authenticate challenge.
	Error(r *Request, err error) *Response
}

// Aliased is implemented by formats served under more than one prefix
// (maven: /maven2 and /maven).
type Aliased interface {
	Aliases() []string
}

// Prefixes lists every prefix f is served under, its own first.
func Prefixes(f Format) []string {
	out := []string{f.Prefix()}
	if a, ok := f.(Aliased); ok {
		out = append(out, a.Aliases()...)
	}
	return out
}

// MultiRepo is implemented by formats that serve repositories of more
// than one format identifier (maven also serves "gradle").
type MultiRepo interface {
	RepoFormats() []string // every identifier served, its own name included
}

// RepoFormats lists the repository format identifiers f serves.
func RepoFormats(f Format) []string {
	if m, ok := f.(MultiRepo); ok {
		return m.RepoFormats()
	}
	return []string{f.Name()}
}

// ArtifactDeleter is implemented by formats that keep state beside their
// artifacts (tags, dist-tags): the REST API deletes their artifacts
// through it, so that state follows.
type ArtifactDeleter interface {
	DeleteArtifact(ctx context.Context, r *Request, repo *meta.Repository, a *meta.Artifact) (uint64, error)
}

// Header is the read side of request headers, whatever the transport.
type Header interface {
	Get(key string) string
}

// Request is a transport-neutral request.
type Request struct {
	Method        string
	Prefix        string // the prefix the request came in under (an alias, maybe)
	Path          string // below the prefix, starting with "/", percent-decoded
	RawPath       string // the same, still escaped (npm's "@scope%2fname")
	Params        map[string]string
	Query         url.Values
	Header        Header
	Body          io.Reader
	ContentLength int64 // -1 when unknown
	Principal     *auth.Principal
	BaseURL       string // scheme://host[:port] the client used (see URLs)
	RemoteAddr    string
	RequestID     string
}

// Param returns a path parameter.
func (r *Request) Param(name string) string { return r.Params[name] }

// Response is what a handler answers: a small rendered Body, or a blob
// File that the transport streams (with Range and conditional requests).
type Response struct {
	Status  int
	Header  http.Header
	Body    []byte
	File    blob.File // closed by the transport
	Name    string    // file name for Content-Type sniffing and Range
	ModTime time.Time
}

// NewResponse starts a response with a status.
func NewResponse(status int) *Response {
	return &Response{Status: status, Header: http.Header{}}
}

// Committer commits a metadata command (cluster/leader on the origin).
type Committer = meta.Committer

// Deps are what format handlers work with.
type Deps struct {
	Meta      *meta.Store
	Blobs     blob.Store
	Commit    Committer // nil where writes are not served
	Now       func() time.Time
	NewID     func() string
	MaxUpload int64 // bytes; 0 = unlimited
	// OnDownload is told of every served download (statistics, events).
	OnDownload func(*Request, *meta.Artifact)
	// Tokens issues registry tokens (docker's Bearer token flow).
	Tokens TokenIssuer
	// ScratchDir is a private directory for a request's temporary files
	// on this node (an npm publish spills its tarball there before the
	// blob store); each format makes its own subdirectory.
	ScratchDir string
	// Ingest holds uploads that arrive over several requests (OCI upload
	// sessions) until they are committed into Blobs; nil where writes are
	// not served.
	Ingest blob.Ingester
	// Space, when set, refuses uploads while the data disk is nearly full
	// and hears of writes that found it full (see GuardUpload).
	Space SpaceGuard
}

// SpaceGuard keeps uploads from filling the data disk
// (diskspace.Guard on the origin). Its refusals wrap blob.ErrNoSpace.
type SpaceGuard interface {
	// Admit refuses an upload of n bytes (n <= 0: length unknown).
	Admit(n int64) error
	// Reader makes body fail once free space runs low while it streams.
	Reader(body io.Reader) io.Reader
	// Observe is told how a write ended, so a full disk shows in health.
	Observe(err error)
}

// Sized is a body that knows its length before it is read: a request
// body with a declared Content-Length (-1 when none), a bytes.Reader.
type Sized interface {
	Size() int64
}

// TokenIssuer hands a principal a short-lived registry token carrying a
// grant (docker's Bearer token flow).
type TokenIssuer interface {
	IssueRegistryToken(p *auth.Principal, g auth.RegistryGrant, ttl time.Duration) (string, time.Time, error)
}

// Match finds the route for method and path, with its parameters.
func Match(routes []Route, method, path string) (*Route, map[string]string, bool) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	segs := splitPath(path)
	pathMatched := false
	for i := range routes {
		var params map[string]string
		var ok bool
		if routes[i].Match != nil {
			params, ok = routes[i].Match(path)
		} else {
			params, ok = matchPath(routes[i].Path, segs)
		}
		if !ok {
			continue
		}
		pathMatched = true
		if routes[i].Method == method {
			return &routes[i], params, true
		}
	}
	return nil, nil, pathMatched
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func matchPath(pattern string, segs []string) (map[string]string, bool) {
	pat := splitPath(pattern)
	params := map[string]string{}
	for i, ps := range pat {
		if strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "...}") {
			if i >= len(segs) {
				return nil, false
			}
			params[ps[1:len(ps)-4]] = strings.Join(segs[i:], "/")
			return params, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "}") {
			params[ps[1:len(ps)-1]] = segs[i]
			continue
		}
		if ps != segs[i] {
			return nil, false
		}
	}
	if len(pat) != len(segs) {
		return nil, false
	}
	return params, true
}
