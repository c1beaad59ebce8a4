package oci

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
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
	d *format.Deps
	// sessions serialises requests on one upload session; images
	// serialises the manifest writes of one image (each reads the tags,
	// decides and commits one command).
	sessions, imageWrites format.KeyLock
}

var _ format.Format = (*Format)(nil)

// New returns the OCI format over deps.
func New(d *format.Deps) *Format { return &Format{d: d} }

// Name implements format.Format.
func (f *Format) Name() string { return Name }

// Prefix implements format.Format.
func (f *Format) Prefix() string { return Prefix }

// Routes implements format.Format. Upload sessions are node-local state,
// so even their status GET is a Write route (edges forward it).
func (f *Format) Routes() []format.Route {
	k := func(kind Kind) func(string) (map[string]string, bool) {
		return func(p string) (map[string]string, bool) {
			t, ok := ParsePath(p)
			if !ok || t.Kind != kind {
				return nil, false
			}
			return map[string]string{"name": t.Name, "ref": t.Ref}, true
		}
	}
	w := f.wrap
	return []format.Route{
		{Method: http.MethodGet, Path: "/", Op: format.Read, Handle: w(f.ping)},
		{Method: http.MethodGet, Path: "/token", Op: format.Read, Handle: w(f.token)},
		{Method: http.MethodPost, Path: "/token", Op: format.Read, Handle: w(f.tokenPost)},
		{Method: http.MethodGet, Path: "/_catalog", Op: format.Read, Handle: w(f.catalog)},
		{Method: http.MethodGet, Match: k(KindTags), Op: format.Read, Handle: w(f.tags)},
		{Method: http.MethodGet, Match: k(KindManifest), Op: format.Read, Handle: w(f.getManifest)},
		{Method: http.MethodPut, Match: k(KindManifest), Op: format.Write, Handle: w(f.putManifest)},
		{Method: http.MethodDelete, Match: k(KindManifest), Op: format.Write, Handle: w(f.deleteManifest)},
		{Method: http.MethodGet, Match: k(KindBlob), Op: format.Read, Handle: w(f.getBlob)},
		{Method: http.MethodDelete, Match: k(KindBlob), Op: format.Write, Handle: w(f.deleteBlob)},
		{Method: http.MethodPost, Match: k(KindUploads), Op: format.Write, Handle: w(f.startUpload)},
		{Method: http.MethodGet, Match: k(KindSession), Op: format.Write, Handle: w(f.uploadStatus)},
		{Method: http.MethodPatch, Match: k(KindSession), Op: format.Write, Handle: w(f.patchUpload)},
		{Method: http.MethodPut, Match: k(KindSession), Op: format.Write, Handle: w(f.putUpload)},
		{Method: http.MethodDelete, Match: k(KindSession), Op: format.Write, Handle: w(f.cancelUpload)},
		{Method: http.MethodGet, Match: k(KindReferrers), Op: format.Read, Handle: w(f.referrers)},
	}
}

// wrap adds the header docker uses to recognise a v2 registry.
func (f *Format) wrap(h format.Handler) format.Handler {
	return func(ctx context.Context, r *format.Request) (*format.Response, error) {
		resp, err := h(ctx, r)
		if resp != nil {
			resp.Header.Set(apiVersionHeader, apiVersion)
		}
		return resp, err
	}
}

// resolve validates the request's name and returns it with its Depot
// repository, checking that the caller may do action there. A missing or
// non-docker repository is NAME_UNKNOWN.
func (f *Format) resolve(r *format.Request, action string) (ImageName, *meta.Repository, error) {
	n, err := ParseName(r.Param("name"))
	if err != nil {
		return n, nil, err
	}
	repo, err := f.d.Repo(r, n.Repo, action, Name)
	if err != nil {
		return n, nil, nativeRepoErr(err, n)
	}
	if err := granted(r, n, action); err != nil {
		return n, nil, err
	}
	return n, repo, nil
}

// nativeRepoErr turns the shared "repository not found" into the
// distribution's NAME_UNKNOWN (401 and 403 map by code in Error).
func nativeRepoErr(err error, n ImageName) error {
	e := format.Classify(err)
	if e.Status == http.StatusNotFound {
		return withDetail(errf(http.StatusNotFound, codeNameUnknown, "repository %s not found", n.String()), map[string]string{"name": n.String()})
	}
	return err
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
