package npm

import (
	"context"
	"net/http"
	"sync"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/keylock"
	"github.com/depot-registry/depot/shared/meta"
)

// FormatName is the repository format this package serves.
const FormatName = "npm"

// Format is the npm registry format.
type Format struct {
	format.Base
	lim Limits
	// writes serialises the writes of one package: each reads the
	// package's state, decides, and commits one command. It is taken once
	// the request body is read, so a slow client holds nothing others wait
	// for (see lock).
	writes keylock.Lock
	// publishing bounds the publishes a node checks and stores at once
	// (inflating, hashing and copying up to MaxTarball bytes each). It is
	// taken once the tarball is on local disk: only the node's own work
	// holds it, never a client's upload speed.
	publishing chan struct{}

	memoOnce sync.Once
	memo     *memos
}

// maxConcurrentPublishes is how many publishes a node checks and stores
// at once.
const maxConcurrentPublishes = 4

var _ format.Format = (*Format)(nil)

// The read paths' memos (meta.Memo), each per repository and dropped
// when the repository's artifacts or keys change: the search entries of
// its packages (searchIndex) and the state of its packages (load).
type memos struct {
	searches *meta.Memo[string, []searchEntry]
	packages *meta.Memo[pkgMemoKey, *pkgState]
}

type pkgMemoKey struct{ repo, name string }

// Bounds on what the memos keep.
const (
	maxSearchRepos        = 1_000
	maxRememberedPackages = 5_000
	maxRememberedVersions = 500
)

func (f *Format) memos() *memos {
	f.memoOnce.Do(func() {
		watch := []meta.Kind{meta.KindArtifact, meta.KindKV}
		f.memo = &memos{
			searches: meta.NewMemo[string, []searchEntry](f.Env.Meta, maxSearchRepos, nil, watch),
			packages: meta.NewMemo[pkgMemoKey, *pkgState](f.Env.Meta, maxRememberedPackages, nil, watch),
		}
	})
	return f.memo
}

// New returns the npm format over env.
func New(env *format.Env) *Format {
	return &Format{Base: format.NewBase(env, FormatName, "/npm"), lim: DefaultLimits, publishing: make(chan struct{}, maxConcurrentPublishes)}
}

// limits are the publish limits on a node: its upload limit, when lower,
// bounds tarballs too.
func (f *Format) limits(w *format.Writer) Limits {
	lim := f.lim
	if w.MaxUpload > 0 && w.MaxUpload < lim.MaxTarball {
		lim.MaxTarball = w.MaxUpload
	}
	return lim
}

// Routes implements format.Format. npm paths hold package names of one or
// two segments, so one route per method hands the path to ParseRoute.
// A route declares the least a request of its method needs; the writes
// that remove versions ask for delete as well.
func (f *Format) Routes() []format.Route {
	return append([]format.Route{
		{Method: http.MethodGet, Path: "/{repo}/{path...}", Action: meta.ActionRead, Read: f.read},
		{Method: http.MethodPut, Path: "/{repo}/{path...}", Action: meta.ActionWrite, Write: f.write},
		{Method: http.MethodDelete, Path: "/{repo}/{path...}", Action: meta.ActionWrite, Write: f.write},
	}, f.auditRoutes()...)
}

func (f *Format) read(ctx context.Context, r *format.Request) (*format.Response, error) {
	e, err := ParseRoute(r.Method, r.Path)
	if err != nil {
		return nil, err
	}
	switch e.Kind {
	case KindPing:
		return f.ping(r, e)
	case KindWhoami:
		return f.whoami(r, e)
	case KindSearch:
		return f.search(r, e)
	case KindTags:
		return f.tags(r, e)
	case KindPackument:
		return f.packument(r, e)
	case KindVersion:
		return f.version(r, e)
	case KindTarball:
		return f.tarball(ctx, r, e)
	}
	return nil, notServed(r.Method, r.Path)
}

func (f *Format) write(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	e, err := ParseRoute(r.Method, r.Path)
	if err != nil {
		return nil, err
	}
	switch e.Kind {
	case KindPublish:
		return f.publish(ctx, r, w, e)
	case KindRevPut:
		return f.revPut(ctx, r, w, e)
	case KindPackageDelete:
		return f.packageDelete(ctx, r, w, e)
	case KindTarballDelete:
		return f.tarballDelete(ctx, r, w, e)
	case KindTagPut:
		return f.tagPut(ctx, r, w, e)
	case KindTagDelete:
		return f.tagDelete(ctx, r, w, e)
	}
	return nil, notServed(r.Method, r.Path)
}

// Error renders npm's native error body, {"error": "..."}; a 401
// challenges for Basic (npm sends credentials up front, but other
// clients and proxies need the challenge).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, func(e *format.Error) (string, []byte) {
		return mediaJSON, mustJSON(map[string]string{"error": e.Message})
	})
}

// lock serialises the writes of e's package; writes call it after reading
// their body.
func (f *Format) lock(e Endpoint) (unlock func()) {
	return f.writes.Lock(e.Repo + "\x00" + e.Name.String())
}

// pkg loads the package the endpoint names; a package with no version
// is a 404.
func (f *Format) pkg(r *format.Request, e Endpoint) (*meta.Repository, *pkgState, error) {
	st, err := f.load404(r.Repo, e.Name)
	return r.Repo, st, err
}

// jsonResponse answers a small JSON document.
func jsonResponse(status int, contentType string, v any) *format.Response {
	resp := format.JSON(status, v)
	resp.Header.Set("Content-Type", contentType)
	return resp
}

// documentResponse answers a rendered document, negotiated on Accept.
// format.Server tags it (npm's cache revalidates it instead of
// downloading it again) and says no-cache: packuments change with every
// publish.
func documentResponse(r *format.Request, contentType string, v any) *format.Response {
	resp := jsonResponse(http.StatusOK, contentType, v)
	resp.Header.Set("Vary", "Accept")
	return resp
}

// okResponse answers a write with the log index of its command.
func okResponse(status int, idx uint64, v any) *format.Response {
	resp := jsonResponse(status, mediaJSON, v)
	format.SetIndex(resp.Header, idx)
	return resp
}
