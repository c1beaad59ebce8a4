// Package goproxy serves go repositories as a module proxy (GOPROXY) at
// /go/<repo>: @v/list, .info, .mod, .zip and @latest, with case-encoded
// module paths and versions. A module version is uploaded as its zip (PUT
// /go/<repo>/upload, the body the zip), checked the way the go command
// checks what it downloads (golang.org/x/mod/zip); its go.mod is stored
// beside it. A version's files never change once stored: go.sum pins them.
package goproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "go"

// Format is the go module proxy.
type Format struct {
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/go")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodPut, Path: "/{repo}/upload", Action: meta.ActionWrite, Write: f.upload},
		{Method: http.MethodGet, Path: "/{repo}/{path...}", Action: meta.ActionRead, Read: f.get},
	}
}

// Error renders errors as a line of text, which the go command shows; 401
// challenges for Basic credentials (the userinfo of GOPROXY, over HTTPS).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.PlainText)
}

// A request below the repository, decoded.
type request struct {
	module  string // module path, decoded
	version string // decoded; "" for list and latest
	file    string // "list", "info", "mod", "zip" or "latest"
}

// parse decodes "<escaped module>/@v/<escaped version>.<ext>",
// "<escaped module>/@v/list" or "<escaped module>/@latest". Anything else,
// the checksum database's paths among them, is not found: the go command
// then asks elsewhere or says the module is unknown.
func parse(p string) (request, bool) {
	var rq request
	var escMod, rest string
	if m, ok := strings.CutSuffix(p, "/@latest"); ok {
		escMod, rq.file = m, "latest"
	} else if m, v, ok := strings.Cut(p, "/@v/"); ok {
		escMod, rest = m, v
	} else {
		return rq, false
	}
	mod, err := module.UnescapePath(escMod)
	if err != nil || module.CheckPath(mod) != nil {
		return rq, false
	}
	rq.module = mod
	if rq.file == "latest" {
		return rq, true
	}
	if rest == "list" {
		rq.file = "list"
		return rq, true
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return rq, false
	}
	ver, err := module.UnescapeVersion(rest[:i])
	if err != nil || !semver.IsValid(ver) || semver.Canonical(ver) != ver && !strings.HasSuffix(ver, "+incompatible") {
		return rq, false
	}
	rq.version, rq.file = ver, rest[i+1:]
	if rq.file != "info" && rq.file != "mod" && rq.file != "zip" {
		return rq, false
	}
	return rq, true
}

// Artifact paths: "<module>/@v/<version>.zip" and ".mod" (decoded).
func artifactPath(mod, ver, ext string) string { return mod + "/@v/" + ver + "." + ext }

func (f *Format) get(ctx context.Context, r *format.Request) (*format.Response, error) {
	rq, ok := parse(r.Param("path"))
	if !ok {
		return nil, format.NotFound("not found: %s", r.Param("path"))
	}
	switch rq.file {
	case "list", "latest":
		versions, err := f.versions(r.Repo, rq.module)
		if err != nil {
			return nil, err
		}
		// A module with no versions here is unknown (404): the go command
		// probes the parent paths of what it looks for and must be told no.
		if len(versions) == 0 {
			return nil, format.NotFound("no versions of %s in repository %s", rq.module, r.Repo.Name)
		}
		if rq.file == "list" {
			return format.Text(http.StatusOK, strings.Join(versions, "\n")+"\n"), nil
		}
		rq.version = latest(versions)
		return f.info(r, rq)
	case "info":
		return f.info(r, rq)
	}
	a, err := f.Env.Artifact(r.Repo, artifactPath(rq.module, rq.version, rq.file))
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s@%s not found in repository %s", rq.module, rq.version, r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	return f.Env.Serve(r, a, false)
}

// info is {"Version", "Time"} of a stored version: when it was uploaded.
func (f *Format) info(r *format.Request, rq request) (*format.Response, error) {
	a, err := f.Env.Artifact(r.Repo, artifactPath(rq.module, rq.version, "zip"))
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s@%s not found in repository %s", rq.module, rq.version, r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, _ = json.Marshal(struct {
		Version string
		Time    string
	}{rq.version, a.UploadedAt.UTC().Format("2006-01-02T15:04:05Z")})
	resp.ModTime = a.UploadedAt
	return resp, nil
}

// versions are the versions of mod stored in repo, in semver order.
func (f *Format) versions(repo *meta.Repository, mod string) ([]string, error) {
	arts, err := f.Env.List(repo, mod+"/@v/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range arts {
		rest := strings.TrimPrefix(a.Path, mod+"/@v/")
		if v, ok := strings.CutSuffix(rest, ".zip"); ok && !strings.Contains(v, "/") {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, semver.Compare)
	return out, nil
}

// latest is the highest release version, or the highest of all when
// there is none (what the go command picks from a list).
func latest(versions []string) string {
	best := ""
	for _, v := range versions {
		if semver.Prerelease(v) == "" && (best == "" || semver.Compare(v, best) > 0) {
			best = v
		}
	}
	if best == "" {
		best = versions[len(versions)-1]
	}
	return best
}

// DeleteArtifact is a REST delete: a module version is its zip and its go.mod together, so it goes whole, however old its files
// (format.Writer.DeleteVersion).
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	return w.DeleteVersion(ctx, r, a)
}
