// Package generic serves plain files at
// /generic/<repo>/<package>/<version>/<filename>: the simplest format, and
// the model for the others (pure path parser, routes, shared machinery).
package generic

import (
	"context"
	"encoding/json"
	"errors"
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
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the generic format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/generic")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/{path...}", Action: meta.ActionRead, Read: f.get},
		{Method: http.MethodPut, Path: "/{repo}/{path...}", Action: meta.ActionWrite, Write: f.put},
		{Method: http.MethodDelete, Path: "/{repo}/{path...}", Action: meta.ActionDelete, Write: f.delete},
	}
}

func (f *Format) get(ctx context.Context, r *format.Request) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	a, err := f.Env.Artifact(r.Repo, c.Path())
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s not found in repository %s", c.Path(), r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	return f.Env.Serve(r, a, false)
}

func (f *Format) put(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	repo := r.Repo
	ct := r.Header.Get("Content-Type")
	if ct == "" || strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		// curl's default for --data-binary says nothing about the file.
		ct = mime.TypeByExtension(path.Ext(c.File))
	}
	a, idx, err := w.Store(ctx, r, format.Upload{
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

func (f *Format) delete(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	return w.DeleteAt(ctx, r.Repo, c.Path())
}

// coords are the request's coordinates in its repository.
func coords(r *format.Request) (Coords, error) {
	return ParsePath(r.Param("repo") + "/" + r.Param("path"))
}

// Error renders errors with the REST API's error body; 401 challenges for
// Basic credentials (curl, wget and CI scripts send them).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, func(e *format.Error) (string, []byte) {
		return "application/json", apierr.Body(e)
	})
}
