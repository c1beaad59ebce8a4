// Package format is the contract between the transports and the
// package-format handlers. A Format declares routes; each route is marked
// Read or Write and handles a transport-neutral Request, so the same read
// routes can be served by the origin (net/http) and by edges (fasthttp).
package format

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
)

// Op says whether a route only reads (edges serve it locally) or writes
// (edges forward it to the origin).
type Op int

// Route operations.
const (
	Read Op = iota
	Write
)

// Handler serves a read route: it sees the read environment its format
// was built with, and nothing that writes.
type Handler func(ctx context.Context, r *Request) (*Response, error)

// WriteHandler serves a write route with the write environment, which
// exists only on nodes that serve writes: a read handler cannot reach it.
type WriteHandler func(ctx context.Context, r *Request, w *Writer) (*Response, error)

// Route is one path of a format, relative to the format's prefix.
// Path segments are literals, "{name}" (one segment) or, last, "{name...}"
// (the rest of the path). A GET route also answers HEAD.
// Formats whose paths a pattern cannot express (an OCI name holds
// slashes) give Match instead of Path.
//
// A route that names a repository gives it as the parameter "repo" and
// declares the Action it needs there (meta.ActionRead, ActionWrite or
// ActionDelete): Serve finds the repository, checks the action and hands
// the handler Request.Repo. A route with no Action (a ping, a token
// endpoint, a catalog that filters what it lists) checks for itself.
// Exactly one of Read and Write is set.
type Route struct {
	Method string
	Path   string
	Match  func(path string) (map[string]string, bool)
	Action string
	Read   Handler
	Write  WriteHandler
}

// Op is the route's operation: Write when it has a write handler.
func (rt *Route) Op() Op {
	if rt.Write != nil {
		return Write
	}
	return Read
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

// Validator is implemented by formats whose path parameters follow rules
// of their own (an OCI name): Serve checks them once the caller is
// authenticated and before the repository is looked up, so a malformed
// name is a 400 rather than an unknown repository.
type Validator interface {
	Validate(r *Request) error
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

// CredentialReader is implemented by formats whose clients send their
// credential elsewhere than in Authorization (NuGet's X-NuGet-ApiKey):
// Serve authenticates the Authorization value it returns.
type CredentialReader interface {
	Credential(r *Request) string
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

// ByRepoFormat keys formats by every repository format each serves
// (gradle -> maven).
func ByRepoFormat(formats []Format) map[string]Format {
	by := map[string]Format{}
	for _, f := range formats {
		for _, name := range RepoFormats(f) {
			by[name] = f
		}
	}
	return by
}

// Configurable is implemented by formats whose repositories have
// settings: each setting's allowed values, the first being the default.
type Configurable interface {
	Settings() map[string][]string
}

// RepoNamer is implemented by formats whose clients need more of a
// repository name than the API asks of every name (docker: lowercase).
type RepoNamer interface {
	CheckRepoName(name string) error
}

// CommonSettings are the repository settings of every format, with the
// values each takes (nil: any, of at most 128 bytes, checked by the
// application): scan_on_upload turns the security scan of each upload
// off or on (on unless set; the setting security.scan_on_upload is the
// default of repositories that do not say); signing_key is the id of
// the signing key each upload is signed with (none: not signed).
var CommonSettings = map[string][]string{"scan_on_upload": {"true", "false"}, "signing_key": nil}

// CheckRepo applies f's rules to a repository's name (skipped when
// empty) and settings; the error is a validation failure naming the field.
// A nil f (a format no handler serves) has no rules and no settings.
func CheckRepo(f Format, name string, settings map[string]string) error {
	if n, ok := f.(RepoNamer); ok && name != "" {
		if err := n.CheckRepoName(name); err != nil {
			return apierr.Invalid("name", "%s", err.Error())
		}
	}
	allowed := maps.Clone(CommonSettings)
	if c, ok := f.(Configurable); ok {
		maps.Copy(allowed, c.Settings())
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		values, ok := allowed[k]
		if !ok {
			return apierr.Invalid("settings", "this repository's format has no setting %q", k).With("setting", k)
		}
		if values == nil { // "" removes it
			if len(settings[k]) > 128 {
				return apierr.Invalid("settings", "setting %s is a value of at most 128 bytes", k).With("setting", k)
			}
			continue
		}
		if !slices.Contains(values, settings[k]) {
			return apierr.Invalid("settings", "setting %s must be one of %s", k, strings.Join(values, ", ")).With("setting", k)
		}
	}
	return nil
}

// ArtifactDeleter is implemented by formats that keep state beside their
// artifacts (tags, dist-tags): the REST API deletes their artifacts
// through it, so that state follows.
type ArtifactDeleter interface {
	DeleteArtifact(ctx context.Context, r *Request, w *Writer, a *meta.Artifact) (uint64, error)
}

// Pinner is implemented by formats whose versions other records point
// at (npm dist-tags, the OCI tag latest, an image index's manifests):
// retention rules never delete the versions of a package Pinned names.
type Pinner interface {
	Pinned(tx *meta.Tx, repo *meta.Repository, pkg string) (map[string]bool, error)
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
	// Repo is the repository the route names, found and authorised by
	// Serve for Action (nil on routes that declare none).
	Repo   *meta.Repository
	Action string
	// Interrupted, set by the transport, says whether a handler's error
	// came from the connection: ErrSlowBody (the body was cut for being
	// too slow: a 408), ErrClientGone (nobody is left to answer), or nil.
	Interrupted func(err error) error
	// Downloaded is the artifact the answer downloads (Env.Serve told
	// OnDownload), for a transport that answers it again itself; nil when
	// the answer is not a download.
	Downloaded *meta.Artifact
	// as is the principal an in-process caller serves the request for
	// (Server.ServeAs); requests from the network have none.
	as *auth.Principal
	// uploadedAt, uploadedBy and properties, set by an importer
	// (Imported), are when and by whom the files it writes were uploaded
	// where they come from, and the properties they had there.
	uploadedAt time.Time
	uploadedBy string
	properties map[string][]string
}

// Imported marks r as an importer's (a migration's): the artifacts it
// records keep the upload time, uploader and properties (within
// meta.CheckProperties' bounds) of where they come from.
func (r *Request) Imported(at time.Time, by string, properties map[string][]string) *Request {
	r.uploadedAt, r.uploadedBy, r.properties = at, by, properties
	return r
}

// SignatureAttacher is a format that also keeps an artifact's signature
// where its clients look for one (OCI: cosign's signature manifests):
// sign is given the payload to sign and answers its signature (base64).
// r says who asks, where (its BaseURL) and in which repository.
type SignatureAttacher interface {
	AttachSignature(ctx context.Context, w *Writer, r *Request, a *meta.Artifact, sign func(payload []byte) (string, error)) error
}

// Param returns a path parameter.
func (r *Request) Param(name string) string { return r.Params[name] }

// Response is what a handler answers: a small rendered Body, or a Blob
// that the transport opens from wherever it keeps blobs (the origin's
// blob store, an edge's cache) and streams with Range, HEAD and
// conditional requests.
type Response struct {
	Status  int
	Header  http.Header
	Body    []byte
	Blob    *BlobRef
	Name    string // file name for Range and conditional requests
	ModTime time.Time
	// Abort tells the transport to drop the connection unanswered: the
	// client went away (Status is then StatusClientClosed, for logs).
	Abort bool
	// Upstream tells an edge's transport to forward the request to an
	// origin (see ErrUpstream); the response is the answer when none can
	// be reached.
	Upstream bool
	// Reason, when set, is the status line's reason phrase in place of
	// the standard one (apierr.Error.WithReason), on HTTP/1.1.
	Reason string
}

// ReasonPhrase is s made fit for a status line: printable ASCII, no line
// breaks, at most 400 bytes.
func ReasonPhrase(s string) string {
	b := make([]byte, 0, min(len(s), 400))
	for i := 0; i < len(s) && len(b) < 400; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}

// BlobRef names the blob a response serves.
type BlobRef struct {
	Digest string // blob store address
	Size   int64
	// Missing is answered (in the format's shape) if the blob cannot be
	// found where the transport looks; nil: a plain 404.
	Missing error
}

// StatusClientClosed is nginx's 499: the client went away before it was
// answered. Logs, metrics and the audit log record it; it is never sent.
const StatusClientClosed = 499

// NewResponse starts a response with a status.
func NewResponse(status int) *Response {
	return &Response{Status: status, Header: http.Header{}}
}

// Committer commits a metadata command (cluster/leader on the origin).
type Committer = meta.Committer

// Env is the read environment every handler works with: a view of the
// metadata and the clock. Formats are built over it. Blob bytes are not
// part of it: a read answers a BlobRef and the transport opens it.
type Env struct {
	Meta *meta.Store
	Now  func() time.Time
	// OnDownload is told of every served download (statistics, events).
	OnDownload func(*Request, *meta.Artifact)
	// Advisories, when set, is the advisory database (an origin's): what
	// a client's audit is answered from (nil: ErrUpstream).
	Advisories func(context.Context) (*vuln.DB, error)
	// Admit, when set, decides whether an artifact's file may be served
	// (the security policies): a non-nil error is the client's answer,
	// in its format's own error shape.
	Admit func(*Request, *meta.Artifact) error
	// Tokens issues registry tokens (docker's Bearer token flow); nil
	// where none are issued.
	Tokens TokenIssuer

	memoOnce sync.Once
	memo     *envMemos
	switches atomic.Pointer[pluginSwitches] // PluginEnabled's
	prefixes sync.Map                       // repository format name -> URL prefix of the servers built over it
}

// Writer is the write environment: what a write route needs besides the
// read environment. Only nodes that serve writes have one.
type Writer struct {
	*Env
	Commit    Committer
	Blobs     blob.Store
	NewID     func() string
	MaxUpload int64 // bytes; 0 = unlimited
	// Ingest holds uploads that arrive over several requests (OCI upload
	// sessions) until they are committed into Blobs.
	Ingest blob.Ingester
	// ScratchDir is a private directory for a request's temporary files
	// on this node (an npm publish spills its tarball there before the
	// blob store); each format makes its own subdirectory.
	ScratchDir string
	// Space, when set, refuses uploads while the data disk is nearly full
	// and hears of writes that found it full (see GuardUpload).
	Space SpaceGuard
	// OnUploaded, when set, hears of the artifacts each committed write
	// recorded, by repository format: those announced with an
	// artifact.uploaded event.
	OnUploaded func(format string, n int)
	// Screen, when set, is shown the artifacts a write is about to record
	// (those announced as uploads, their blobs stored) before it commits;
	// an error refuses the write, which then records nothing (a security
	// policy that blocks vulnerable uploads).
	Screen func(ctx context.Context, uploads []*meta.Artifact) error
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
