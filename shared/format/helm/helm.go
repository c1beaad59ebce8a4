// Package helm serves chart repositories at /helm/<repo>: index.yaml with
// absolute chart URLs and serverInfo.contextPath, chart downloads, and
// uploads the ChartMuseum way (POST /helm/<repo>/api/charts, multipart
// field "chart" or the raw archive) or with a plain PUT of
// /helm/<repo>/charts/<file>.tgz; ChartMuseum's listing and delete.
// Helm charts pushed as OCI artifacts go through the docker format.
//
// A chart version is the artifact "charts/<name>-<version>.tgz"; its Attrs
// hold the Chart.yaml metadata (as JSON) that index.yaml repeats.
package helm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/semver"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "helm"

// Format is the chart repository.
type Format struct {
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/helm")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/index.yaml", Action: meta.ActionRead, Read: f.index},
		{Method: http.MethodGet, Path: "/{repo}/charts/{file}", Action: meta.ActionRead, Read: f.chart},
		{Method: http.MethodPut, Path: "/{repo}/charts/{file}", Action: meta.ActionWrite, Write: f.put},
		{Method: http.MethodPost, Path: "/{repo}/api/charts", Action: meta.ActionWrite, Write: f.post},
		{Method: http.MethodGet, Path: "/{repo}/api/charts", Action: meta.ActionRead, Read: f.list},
		{Method: http.MethodGet, Path: "/{repo}/api/charts/{name}", Action: meta.ActionRead, Read: f.list},
		{Method: http.MethodGet, Path: "/{repo}/api/charts/{name}/{version}", Action: meta.ActionRead, Read: f.list},
		{Method: http.MethodDelete, Path: "/{repo}/api/charts/{name}/{version}", Action: meta.ActionDelete, Write: f.delete},
	}
}

// Error renders ChartMuseum's {"error": ...}; 401 challenges for Basic
// (helm's --username/--password).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.JSONError)
}

func chartPath(name, version string) string { return "charts/" + name + "-" + version + ".tgz" }

// entry is a chart version as index.yaml and the listing show it.
func entry(r *format.Request, a *meta.Artifact) map[string]any {
	e := map[string]any{}
	_ = json.Unmarshal(a.Attrs, &e)
	e["urls"] = []string{format.URL(r, r.Prefix, r.Repo.Name, "charts", strings.TrimPrefix(a.Path, "charts/"))}
	e["created"] = a.UploadedAt.UTC().Format(time.RFC3339Nano)
	e["digest"] = a.Checksums.SHA256
	return e
}

// charts are the repository's chart versions by name, newest first.
func (f *Format) charts(r *format.Request, name string) (map[string][]*meta.Artifact, error) {
	arts, err := f.Env.List(r.Repo, "charts/")
	if err != nil {
		return nil, err
	}
	out := map[string][]*meta.Artifact{}
	for i := range arts {
		a := &arts[i]
		if name == "" || a.PackageName == name {
			out[a.PackageName] = append(out[a.PackageName], a)
		}
	}
	for _, vs := range out {
		slices.SortFunc(vs, func(a, b *meta.Artifact) int { return semver.Compare("v"+b.Version, "v"+a.Version) })
	}
	return out, nil
}

func (f *Format) index(ctx context.Context, r *format.Request) (*format.Response, error) {
	byName, err := f.charts(r, "")
	if err != nil {
		return nil, err
	}
	// generated is when the newest chart came: the same on every node,
	// and the same until the repository changes.
	entries, generated := map[string][]map[string]any{}, time.Unix(0, 0).UTC()
	for name, vs := range byName {
		for _, a := range vs {
			entries[name] = append(entries[name], entry(r, a))
			if a.UploadedAt.After(generated) {
				generated = a.UploadedAt.UTC()
			}
		}
	}
	doc := map[string]any{"apiVersion": "v1", "entries": entries, "generated": generated.Format(time.RFC3339Nano),
		"serverInfo": map[string]string{"contextPath": r.Prefix + "/" + r.Repo.Name}}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/x-yaml")
	resp.Body = body
	return resp, nil
}

func (f *Format) chart(ctx context.Context, r *format.Request) (*format.Response, error) {
	a, err := f.Env.Artifact(r.Repo, "charts/"+r.Param("file"))
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("no chart %s in repository %s", r.Param("file"), r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	return f.Env.Serve(r, a, false)
}

// list is ChartMuseum's listing: every chart, one chart's versions, or
// one version.
func (f *Format) list(ctx context.Context, r *format.Request) (*format.Response, error) {
	name, version := r.Param("name"), r.Param("version")
	byName, err := f.charts(r, name)
	if err != nil {
		return nil, err
	}
	var body any
	switch {
	case name == "":
		all := map[string][]map[string]any{}
		for n, vs := range byName {
			for _, a := range vs {
				all[n] = append(all[n], entry(r, a))
			}
		}
		body = all
	case len(byName[name]) == 0:
		return nil, format.NotFound("no chart %s in repository %s", name, r.Repo.Name)
	case version == "":
		var vs []map[string]any
		for _, a := range byName[name] {
			vs = append(vs, entry(r, a))
		}
		body = vs
	default:
		i := slices.IndexFunc(byName[name], func(a *meta.Artifact) bool { return a.Version == version })
		if i < 0 {
			return nil, format.NotFound("no chart %s %s in repository %s", name, version, r.Repo.Name)
		}
		body = entry(r, byName[name][i])
	}
	resp := format.JSON(http.StatusOK, body)
	return resp, nil
}

func (f *Format) delete(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	resp, err := w.DeleteAt(ctx, r.Repo, chartPath(r.Param("name"), r.Param("version"))) // a 204 with the write's index
	if err != nil {
		return nil, err
	}
	resp.Status = http.StatusOK
	resp.Header.Set("Content-Type", "application/json")
	resp.Body = []byte(`{"deleted":true}`)
	return resp, nil
}
