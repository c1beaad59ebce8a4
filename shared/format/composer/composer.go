// Package composer serves Composer repositories at /composer/<repo>:
// packages.json (metadata-url, available-packages, search, list), the v2
// metadata files p2/<vendor>/<name>.json (tagged versions) and ~dev.json
// (branches), and dist zips. A version is uploaded as its zip with
// composer.json at the root (PUT /composer/<repo>[?version=x.y.z]); name
// and version come from composer.json (the query gives a version it
// lacks). A version's artifact is
// "<vendor>/<name>/<version>/<vendor>-<name>-<version>.zip", its Attrs the
// composer.json.
package composer

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "composer"

// Format is the Composer repository.
type Format struct {
	format.Base
}

var (
	_ format.Format          = (*Format)(nil)
	_ format.ArtifactDeleter = (*Format)(nil)
)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/composer")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/packages.json", Action: meta.ActionRead, Read: f.root},
		{Method: http.MethodGet, Path: "/{repo}/p2/{vendor}/{file}", Action: meta.ActionRead, Read: f.metadata},
		{Method: http.MethodGet, Path: "/{repo}/files/{vendor}/{name}/{version}/{file}", Action: meta.ActionRead, Read: f.dist},
		{Method: http.MethodGet, Path: "/{repo}/list.json", Action: meta.ActionRead, Read: f.list},
		{Method: http.MethodGet, Path: "/{repo}/search.json", Action: meta.ActionRead, Read: f.list},
		{Method: http.MethodPut, Path: "/{repo}", Action: meta.ActionWrite, Write: f.upload},
	}
}

// Error renders {"status": ..., "message": ...}; 401 challenges for Basic
// (composer sends its http-basic credentials only after one).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, func(e *format.Error) (string, []byte) {
		return "application/json", apierr.Body(e)
	})
}

var packageName = regexp.MustCompile(`^[a-z0-9]([_.-]?[a-z0-9]+)*/[a-z0-9](([_.]|-{1,2})?[a-z0-9]+)*$`)

// packages are the repository's versions by package name (name's alone
// when set), and the date recorded under key (see modified.go; "": none),
// read in one view: a document is never dated before what it shows.
func (f *Format) packages(repo *meta.Repository, name, key string) (map[string][]meta.Artifact, time.Time, error) {
	prefix := ""
	if name != "" {
		prefix = name + "/"
	}
	var arts []meta.Artifact
	var modified time.Time
	err := f.Env.View(func(tx *meta.Tx) error {
		var err error
		if arts, err = tx.ArtifactsUnder(repo.ID, prefix); err != nil {
			return err
		}
		if key != "" {
			modified = readModified(tx, repo.ID, key)
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	out := map[string][]meta.Artifact{}
	for _, a := range arts {
		if strings.HasSuffix(a.Path, ".zip") {
			out[a.PackageName] = append(out[a.PackageName], a)
		}
	}
	return out, modified, nil
}

func (f *Format) root(ctx context.Context, r *format.Request) (*format.Response, error) {
	byName, modified, err := f.packages(r.Repo, "", namesKey)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	base := r.Prefix + "/" + r.Repo.Name
	abs := strings.TrimRight(r.BaseURL, "/") + base
	return setModified(format.JSON(http.StatusOK, map[string]any{"packages": map[string]any{}, "metadata-url": base + "/p2/%package%.json",
		"available-packages": names, "search": abs + "/search.json?q=%query%&type=%type%", "list": abs + "/list.json"}), modified), nil
}

// dev reports whether a version is a branch (~dev.json) rather than a tag.
func dev(v string) bool { return strings.HasPrefix(v, "dev-") || strings.HasSuffix(v, "-dev") }

func (f *Format) metadata(ctx context.Context, r *format.Request) (*format.Response, error) {
	file, wantDev := strings.TrimSuffix(r.Param("file"), ".json"), false
	if !strings.HasSuffix(r.Param("file"), ".json") {
		return nil, format.NotFound("no such metadata file")
	}
	if n, ok := strings.CutSuffix(file, "~dev"); ok {
		file, wantDev = n, true
	}
	name := strings.ToLower(r.Param("vendor") + "/" + file)
	byName, modified, err := f.packages(r.Repo, name, modifiedKey(name))
	if err != nil {
		return nil, err
	}
	vs := byName[name]
	if len(vs) == 0 {
		return nil, format.NotFound("package %s is not in repository %s", name, r.Repo.Name)
	}
	entries := []map[string]any{}
	for _, a := range vs {
		if dev(a.Version) == wantDev {
			entries = append(entries, f.entry(r, &a))
		}
	}
	slices.SortFunc(entries, func(a, b map[string]any) int {
		return strings.Compare(b["version_normalized"].(string), a["version_normalized"].(string))
	})
	return setModified(format.JSON(http.StatusOK, map[string]any{"packages": map[string]any{name: entries}}), modified), nil
}

// entry is a version as composer reads it: composer.json, plus where and
// when.
func (f *Format) entry(r *format.Request, a *meta.Artifact) map[string]any {
	e := map[string]any{}
	_ = json.Unmarshal(a.Attrs, &e)
	e["name"], e["version"], e["version_normalized"] = a.PackageName, a.Version, normalize(a.Version)
	e["time"] = a.UploadedAt.UTC().Format(time.RFC3339)
	vendor, pkg, _ := strings.Cut(a.PackageName, "/")
	e["dist"] = map[string]string{"type": "zip", "url": format.URL(r, r.Prefix, r.Repo.Name, "files", vendor, pkg, a.Version, a.Path[strings.LastIndexByte(a.Path, '/')+1:]),
		"shasum": a.Checksums.SHA1, "reference": a.Checksums.SHA1}
	return e
}

func (f *Format) dist(ctx context.Context, r *format.Request) (*format.Response, error) {
	p := r.Param("vendor") + "/" + r.Param("name") + "/" + r.Param("version") + "/" + r.Param("file")
	a, err := f.Env.Artifact(r.Repo, p)
	if err != nil {
		return nil, format.NotFound("no such file in repository %s", r.Repo.Name)
	}
	return f.Env.Serve(r, a, false)
}

// list is list.json ({"packageNames"}, dated as packages.json is) and
// search.json (names containing q, not dated).
func (f *Format) list(ctx context.Context, r *format.Request) (*format.Response, error) {
	listing := strings.HasSuffix(r.Path, "/list.json")
	key := ""
	if listing {
		key = namesKey
	}
	byName, modified, err := f.packages(r.Repo, "", key)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(r.Query.Get("q"))
	names := []string{}
	results := []map[string]any{}
	for n, vs := range byName {
		if !strings.Contains(n, q) {
			continue
		}
		names = append(names, n)
		var desc string
		var c struct {
			Description string `json:"description"`
		}
		if json.Unmarshal(vs[len(vs)-1].Attrs, &c) == nil {
			desc = c.Description
		}
		results = append(results, map[string]any{"name": n, "description": desc, "downloads": 0})
	}
	slices.Sort(names)
	slices.SortFunc(results, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
	if listing {
		return setModified(format.JSON(http.StatusOK, map[string]any{"packageNames": names}), modified), nil
	}
	return format.JSON(http.StatusOK, map[string]any{"results": results, "total": len(results)}), nil
}
