package oci

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/keylock"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "docker"

// Prefix is where the distribution API lives: the host root /v2, as
// clients derive every URL from the registry host alone.
const Prefix = "/v2"

// Defaults of the upload sessions and registry tokens.
const (
	SessionTTL         = 6 * time.Hour // an upload idle this long is dropped
	MaxSessions        = 1000          // concurrent uploads on one node
	MaxSessionsPerUser = 100           // so one user cannot take them all
	TokenTTL           = 5 * time.Minute
)

// Format serves the OCI distribution API.
type Format struct {
	format.Base
	// sessions serialises requests on one upload session; images
	// serialises the manifest writes of one image (each reads the tags,
	// decides and commits one command).
	sessions, imageWrites keylock.Lock

	memoOnce sync.Once
	memo     *catalogMemos
}

var (
	_ format.Format    = (*Format)(nil)
	_ format.Validator = (*Format)(nil)
)

// New returns the OCI format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, Prefix)} }

// Routes implements format.Format. Upload sessions are node-local state,
// so even their status GET is a Write route (edges forward it). A route
// below a name gives the name's first component as "repo".
func (f *Format) Routes() []format.Route {
	k := func(kind Kind) func(string) (map[string]string, bool) {
		return func(p string) (map[string]string, bool) {
			t, ok := ParsePath(p)
			if !ok || t.Kind != kind {
				return nil, false
			}
			return map[string]string{"repo": RepoOf(t.Name), "name": t.Name, "ref": t.Ref}, true
		}
	}
	const read, write, del = meta.ActionRead, meta.ActionWrite, meta.ActionDelete
	return []format.Route{
		{Method: http.MethodGet, Path: "/", Read: rd(f.ping)},
		{Method: http.MethodGet, Path: "/token", Read: rd(f.token)},
		{Method: http.MethodPost, Path: "/token", Read: rd(f.tokenPost)},
		{Method: http.MethodGet, Path: "/_catalog", Read: rd(f.catalog)},
		{Method: http.MethodGet, Match: k(KindTags), Action: read, Read: rd(f.tags)},
		{Method: http.MethodGet, Match: k(KindManifest), Action: read, Read: rd(f.getManifest)},
		{Method: http.MethodPut, Match: k(KindManifest), Action: write, Write: wr(f.putManifest)},
		{Method: http.MethodDelete, Match: k(KindManifest), Action: del, Write: wr(f.deleteManifest)},
		{Method: http.MethodGet, Match: k(KindBlob), Action: read, Read: rd(f.getBlob)},
		{Method: http.MethodDelete, Match: k(KindBlob), Action: del, Write: wr(f.deleteBlob)},
		{Method: http.MethodPost, Match: k(KindUploads), Action: write, Write: wr(f.startUpload)},
		{Method: http.MethodGet, Match: k(KindSession), Action: write, Write: wr(f.uploadStatus)},
		{Method: http.MethodPatch, Match: k(KindSession), Action: write, Write: wr(f.patchUpload)},
		{Method: http.MethodPut, Match: k(KindSession), Action: write, Write: wr(f.putUpload)},
		{Method: http.MethodDelete, Match: k(KindSession), Action: write, Write: wr(f.cancelUpload)},
		{Method: http.MethodGet, Match: k(KindReferrers), Action: read, Read: rd(f.referrers)},
	}
}

// rd and wr add the header docker uses to recognise a v2 registry.
func rd(h format.Handler) format.Handler {
	return func(ctx context.Context, r *format.Request) (*format.Response, error) {
		return versioned(h(ctx, r))
	}
}

func wr(h format.WriteHandler) format.WriteHandler {
	return func(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
		return versioned(h(ctx, r, w))
	}
}

func versioned(resp *format.Response, err error) (*format.Response, error) {
	if resp != nil {
		resp.Header.Set(apiVersionHeader, apiVersion)
	}
	return resp, err
}

// Validate implements format.Validator: a route below a name needs a
// valid one.
// CheckRepoName implements format.RepoNamer: a repository name is the
// first component of image names, which OCI wants lowercase.
func (f *Format) CheckRepoName(name string) error {
	if strings.ToLower(name) != name {
		return errors.New("docker repository names must be lowercase")
	}
	return nil
}

func (f *Format) Validate(r *format.Request) error {
	if name, ok := r.Params["name"]; ok {
		_, err := ParseName(name)
		return err
	}
	return nil
}

// resolve validates the request's name and returns it with the
// repository Serve found, checking that a registry token grants the
// route's action on this very image.
func (f *Format) resolve(r *format.Request) (ImageName, *meta.Repository, error) {
	n, err := ParseName(r.Param("name"))
	if err != nil {
		return n, nil, err
	}
	if err := granted(r, n, r.Action); err != nil {
		return n, nil, err
	}
	return n, r.Repo, nil
}

// nameUnknown is the distribution's error for a repository that does
// not exist or that the caller may not see.
func nameUnknown(name string) error {
	return withDetail(errf(http.StatusNotFound, codeNameUnknown, "repository %s not found", name), map[string]string{"name": name})
}

// service is the registry's service name: the host clients address.
func service(r *format.Request) string {
	if u, err := url.Parse(r.BaseURL); err == nil && u.Host != "" {
		return u.Host
	}
	return strings.TrimPrefix(strings.TrimPrefix(r.BaseURL, "https://"), "http://")
}

// nameURL is the absolute URL of a path below a name.
func nameURL(r *format.Request, n ImageName, segs ...string) string {
	all := append(strings.Split(n.String(), "/"), segs...)
	return format.URL(r, Prefix, all...)
}

func newResp(status int) *format.Response { return format.NewResponse(status) }
