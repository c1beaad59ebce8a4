// Package crates serves cargo registries at /crates/<repo>: the sparse
// index (/index/config.json and one file per crate), cargo's publish API
// (binary body), downloads, yank and unyank, owners and search.
//
// A version is an artifact "<lowercase name>/<version>/<name>-<version>.crate"
// whose Attrs hold its index line (cargo's publish JSON turned into the
// index's shape, with the checksum); a yank is a KV flag beside it, so an
// index line never changes but for "yanked". Crate names are unique
// case-insensitively with - and _ alike (KV "name/<canonical>").
package crates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "crates"

// Format is the cargo registry.
type Format struct {
	format.Base
}

var (
	_ format.Format          = (*Format)(nil)
	_ format.ArtifactDeleter = (*Format)(nil)
)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/crates")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	const api = "/{repo}/api/v1/crates"
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/index/config.json", Action: meta.ActionRead, Read: f.config},
		{Method: http.MethodGet, Path: "/{repo}/index/{path...}", Action: meta.ActionRead, Read: f.index},
		{Method: http.MethodPut, Path: api + "/new", Action: meta.ActionWrite, Write: f.publish},
		{Method: http.MethodGet, Path: api + "/{name}/{version}/download", Action: meta.ActionRead, Read: f.download},
		{Method: http.MethodDelete, Path: api + "/{name}/{version}/yank", Action: meta.ActionWrite, Write: f.yank(true)},
		{Method: http.MethodPut, Path: api + "/{name}/{version}/unyank", Action: meta.ActionWrite, Write: f.yank(false)},
		{Method: http.MethodGet, Path: api + "/{name}/owners", Action: meta.ActionRead, Read: f.owners},
		{Method: http.MethodPut, Path: api + "/{name}/owners", Action: meta.ActionWrite, Write: f.changeOwners(true)},
		{Method: http.MethodDelete, Path: api + "/{name}/owners", Action: meta.ActionWrite, Write: f.changeOwners(false)},
		{Method: http.MethodGet, Path: api, Action: meta.ActionRead, Read: f.search},
	}
}

// Error renders cargo's error body, {"errors":[{"detail":...}]}; a 401
// challenges for the token cargo keeps for the registry.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, `Cargo login_url="`+strings.TrimRight(r.BaseURL, "/")+`/"`, func(e *format.Error) (string, []byte) {
		b, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"detail": e.Message}}})
		return "application/json", b
	})
}

// base is the registry's URL: cargo's "api", under which "index" lives.
func base(r *format.Request) string {
	return strings.TrimRight(r.BaseURL, "/") + r.Prefix + "/" + r.Repo.Name
}

func (f *Format) config(ctx context.Context, r *format.Request) (*format.Response, error) {
	b := base(r)
	resp := format.JSON(http.StatusOK, map[string]any{"dl": b + "/api/v1/crates", "api": b, "auth-required": !r.Repo.Public})
	return resp, nil
}

// indexPath is where the index file of a crate lives, on its lowercase
// name: 1/<n>, 2/<n>, 3/<c>/<n>, or <c1c2>/<c3c4>/<n>.
func indexPath(name string) string {
	n := strings.ToLower(name)
	switch len(n) {
	case 1, 2:
		return fmt.Sprintf("%d/%s", len(n), n)
	case 3:
		return "3/" + n[:1] + "/" + n
	}
	return n[:2] + "/" + n[2:4] + "/" + n
}

// canonical is the name crates collide under.
func canonical(name string) string { return strings.ReplaceAll(strings.ToLower(name), "-", "_") }

func yankKey(name, version string) string { return "yank/" + strings.ToLower(name) + "/" + version }
func nameKey(name string) string          { return "name/" + canonical(name) }
func ownersKey(name string) string        { return "owners/" + canonical(name) }

func artifactPath(name, version string) string {
	return strings.ToLower(name) + "/" + version + "/" + name + "-" + version + ".crate"
}

// version is a stored version and its index line.
type version struct {
	art  meta.Artifact
	line map[string]any
}

// versions are the stored versions of the crate named (any case), in
// publication order.
func (f *Format) versions(tx *meta.Tx, repo *meta.Repository, name string) ([]version, error) {
	arts, err := tx.ArtifactsUnder(repo.ID, strings.ToLower(name)+"/")
	if err != nil {
		return nil, err
	}
	var out []version
	for _, a := range arts {
		var line map[string]any
		if !strings.HasSuffix(a.Path, ".crate") || json.Unmarshal(a.Attrs, &line) != nil {
			continue
		}
		out = append(out, version{a, line})
	}
	slices.SortFunc(out, func(a, b version) int { return a.art.UploadedAt.Compare(b.art.UploadedAt) })
	return out, nil
}

func (f *Format) index(ctx context.Context, r *format.Request) (*format.Response, error) {
	p := r.Param("path")
	name := p[strings.LastIndexByte(p, '/')+1:]
	if name == "" || indexPath(name) != strings.ToLower(p) {
		return nil, format.NotFound("no index file at %s", p)
	}
	var body []byte
	err := f.Env.View(func(tx *meta.Tx) error {
		vs, err := f.versions(tx, r.Repo, name)
		for _, v := range vs {
			_, yanked := tx.KV(r.Repo.ID, yankKey(name, v.art.Version))
			v.line["yanked"] = yanked
			b, err := json.Marshal(v.line)
			if err != nil {
				return err
			}
			body = append(append(body, b...), '\n')
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, format.NotFound("crate %s is not in repository %s", name, r.Repo.Name)
	}
	return format.Text(http.StatusOK, string(body)), nil // tagged and revalidated as every document is (format.Server)
}

func (f *Format) download(ctx context.Context, r *format.Request) (*format.Response, error) {
	name, ver := r.Param("name"), r.Param("version")
	a, err := f.Env.Artifact(r.Repo, artifactPath(name, ver))
	if errors.Is(err, meta.ErrNotFound) {
		// The path keeps the name as published: find it by any spelling.
		err = f.Env.View(func(tx *meta.Tx) error {
			vs, err := f.versions(tx, r.Repo, name)
			for _, v := range vs {
				if v.art.Version == ver && strings.EqualFold(v.art.PackageName, name) {
					a = &v.art
				}
			}
			if a == nil && err == nil {
				err = meta.ErrNotFound
			}
			return err
		})
	}
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s %s is not in repository %s", name, ver, r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	return f.Env.Serve(r, a, false)
}
