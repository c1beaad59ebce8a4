// Package generic serves plain files at
// /generic/<repo>/<package>/<version>/<filename>: the simplest format, and
// the model for the others (pure path parser, routes, shared machinery).
package generic

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "generic"

// Coords are the parts of a generic file path.
type Coords struct {
	Repo, Package, Version, File string
}

// Path is the artifact path within the repository.
func (c Coords) Path() string { return c.Package + "/" + c.Version + "/" + c.File }

// ParsePath parses "<repo>/<package>/<version>/<filename>" (leading slash
// optional). Every part must be a safe segment.
func ParsePath(p string) (Coords, error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) != 4 {
		return Coords{}, format.BadRequest("path must be <repo>/<package>/<version>/<filename>")
	}
	c := Coords{parts[0], parts[1], parts[2], parts[3]}
	for _, f := range []struct{ what, v string }{{"repository", c.Repo}, {"package", c.Package}, {"version", c.Version}, {"filename", c.File}} {
		if err := format.CheckSegment(f.what, f.v); err != nil {
			return Coords{}, err
		}
	}
	return c, nil
}

// Format is the generic format.
type Format struct {
	d *format.Deps
}

var _ format.Format = (*Format)(nil)

// New returns the generic format over deps.
func New(d *format.Deps) *Format { return &Format{d: d} }

// Name implements format.Format.
func (f *Format) Name() string { return Name }

// Prefix implements format.Format.
func (f *Format) Prefix() string { return "/generic" }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{path...}", Op: format.Read, Handle: f.get},
		{Method: http.MethodPut, Path: "/{path...}", Op: format.Write, Handle: f.put},
		{Method: http.MethodDelete, Path: "/{path...}", Op: format.Write, Handle: f.delete},
	}
}

func (f *Format) get(ctx context.Context, r *format.Request) (*format.Response, error) {
	c, repo, err := f.resolve(r, meta.ActionRead)
	if err != nil {
		return nil, err
	}
	a, err := f.d.Artifact(repo, c.Path())
	if err != nil {
		return nil, format.NotFound("%s not found in repository %s", c.Path(), repo.Name)
	}
	return f.d.Serve(ctx, r, a)
}

func (f *Format) put(ctx context.Context, r *format.Request) (*format.Response, error) {
	c, repo, err := f.resolve(r, meta.ActionWrite)
	if err != nil {
		return nil, err
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" || strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		// curl's default for --data-binary says nothing about the file.
		ct = mime.TypeByExtension(path.Ext(c.File))
	}
	a, idx, err := f.d.Store(ctx, r, format.Upload{
		Repo: repo, Path: c.Path(), Package: c.Package, Version: c.Version, ContentType: ct, Body: r.Body,
		Expect: format.ExpectedChecksums(r.Header),
	})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusCreated)
	format.SetIndex(resp.Header, idx)
	resp.Header.Set("Location", format.URL(r, r.Prefix, c.Repo, c.Package, c.Version, c.File))
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, _ = json.Marshal(format.ViewArtifact(a, repo.Name))
	return resp, nil
}

func (f *Format) delete(ctx context.Context, r *format.Request) (*format.Response, error) {
	c, repo, err := f.resolve(r, meta.ActionDelete)
	if err != nil {
		return nil, err
	}
	return f.d.DeleteAt(ctx, repo, c.Path())
}

func (f *Format) resolve(r *format.Request, action string) (Coords, *meta.Repository, error) {
	c, err := ParsePath(r.Param("path"))
	if err != nil {
		return c, nil, err
	}
	repo, err := f.d.Repo(r, c.Repo, action, Name)
	return c, repo, err
}

// Error renders errors with the REST API's error body; 401 challenges for
// Basic credentials (curl, wget and CI scripts send them).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, func(e *format.Error) (string, []byte) {
		return "application/json", apierr.Body(&apierr.Error{Code: apierr.Code(e.Code), Message: e.Message})
	})
}
