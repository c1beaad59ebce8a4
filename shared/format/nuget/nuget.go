// Package nuget serves NuGet feeds at /nuget/<repo>: the v3 service index
// (/v3/index.json, readable without credentials, as NuGet clients need)
// with the flat container (PackageBaseAddress), registrations, search and
// publish, and the v2 OData feed Debian's nuget 2.8 speaks (service
// document, Packages(Id,Version), FindPackagesById). Push is a PUT of the
// .nupkg (multipart or raw) with the API token in X-NuGet-ApiKey; symbol
// packages are refused. A version is the artifacts
// "<id>/<version>/<id>.<version>.nupkg" and ".../<id>.nuspec" (lowercase
// id, normalized version), Attrs the .nuspec's record.
package nuget

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "nuget"

// Format is the NuGet feed.
type Format struct {
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/nuget")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	const read, write, del = meta.ActionRead, meta.ActionWrite, meta.ActionDelete
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/v3/index.json", Read: f.serviceIndex},
		{Method: http.MethodGet, Path: "/{repo}/v3/package/{id}/index.json", Action: read, Read: f.versionsList},
		{Method: http.MethodGet, Path: "/{repo}/v3/package/{id}/{version}/{file}", Action: read, Read: f.content},
		{Method: http.MethodGet, Path: "/{repo}/v3/registration/{id}/index.json", Action: read, Read: f.registration},
		{Method: http.MethodGet, Path: "/{repo}/v3/registration/{id}/{leaf}", Action: read, Read: f.registrationLeaf},
		{Method: http.MethodGet, Path: "/{repo}/v3/search", Action: read, Read: f.search},
		{Method: http.MethodPut, Path: "/{repo}", Action: write, Write: f.push},
		{Method: http.MethodPut, Path: "/{repo}/api/v2/package", Action: write, Write: f.push},
		{Method: http.MethodDelete, Path: "/{repo}/{id}/{version}", Action: del, Write: f.remove},
		{Method: http.MethodDelete, Path: "/{repo}/api/v2/package/{id}/{version}", Action: del, Write: f.remove},
		{Method: http.MethodGet, Path: "/{repo}", Action: read, Read: f.v2Service},
		{Method: http.MethodGet, Path: "/{repo}/{query}", Action: read, Read: f.v2},
	}
}

// Error renders {"error": ...}; 401 challenges for Basic, which NuGet
// clients answer with their source's credentials.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.JSONError)
}

func base(r *format.Request, name string) string {
	return strings.TrimRight(r.BaseURL, "/") + r.Prefix + "/" + name
}

// serviceIndex lists the resources, each under every @type clients look
// for. It names no package, so it is served without credentials.
func (f *Format) serviceIndex(ctx context.Context, r *format.Request) (*format.Response, error) {
	name := r.Param("repo")
	err := f.Env.View(func(tx *meta.Tx) error {
		repo, err := tx.RepoByName(name)
		if err != nil || repo.Format != Name {
			return format.NotFound("no NuGet repository %s", name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b := base(r, name)
	var res []map[string]string
	add := func(id string, types ...string) {
		for _, t := range types {
			res = append(res, map[string]string{"@id": id, "@type": t})
		}
	}
	add(b+"/v3/package/", "PackageBaseAddress/3.0.0")
	add(b, "PackagePublish/2.0.0")
	add(b+"/v3/registration/", "RegistrationsBaseUrl", "RegistrationsBaseUrl/3.0.0-beta", "RegistrationsBaseUrl/3.0.0-rc",
		"RegistrationsBaseUrl/3.4.0", "RegistrationsBaseUrl/3.6.0")
	add(b+"/v3/search", "SearchQueryService", "SearchQueryService/3.0.0-beta", "SearchQueryService/3.0.0-rc", "SearchQueryService/3.5.0")
	return format.JSON(http.StatusOK, map[string]any{"version": "3.0.0", "resources": res}), nil
}

// version is a stored version of a package.
type version struct {
	pkg
	norm string
	art  meta.Artifact
}

// versions of id (any case), in version order.
func (f *Format) versions(repo *meta.Repository, id string) ([]version, error) {
	return f.stored(repo, strings.ToLower(id)+"/")
}

// stored are the versions under prefix ("": every package's), by id (any
// case), then in version order.
func (f *Format) stored(repo *meta.Repository, prefix string) ([]version, error) {
	arts, err := f.Env.List(repo, prefix)
	if err != nil {
		return nil, err
	}
	var out []version
	for _, a := range arts {
		var p pkg
		if !strings.HasSuffix(a.Path, ".nupkg") || json.Unmarshal(a.Attrs, &p) != nil {
			continue
		}
		out = append(out, version{p, a.Version, a})
	}
	slices.SortFunc(out, func(a, b version) int {
		if c := strings.Compare(strings.ToLower(a.ID), strings.ToLower(b.ID)); c != 0 {
			return c
		}
		return compareVersions(a.norm, b.norm)
	})
	return out, nil
}

func (f *Format) versionsList(ctx context.Context, r *format.Request) (*format.Response, error) {
	vs, err := f.versions(r.Repo, r.Param("id"))
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, format.NotFound("%s is not in repository %s", r.Param("id"), r.Repo.Name)
	}
	list := []string{}
	for _, v := range vs {
		list = append(list, v.norm)
	}
	return format.JSON(http.StatusOK, map[string]any{"versions": list}), nil
}

// content is the flat container's .nupkg and .nuspec.
func (f *Format) content(ctx context.Context, r *format.Request) (*format.Response, error) {
	id, ver := strings.ToLower(r.Param("id")), normalize(r.Param("version"))
	a, err := f.Env.Artifact(r.Repo, id+"/"+ver+"/"+strings.ToLower(r.Param("file")))
	if err != nil {
		return nil, format.NotFound("%s is not in repository %s", r.Param("file"), r.Repo.Name)
	}
	return f.Env.Serve(r, a, false)
}

// leaf is a version's registration leaf.
func (f *Format) leaf(r *format.Request, v version) map[string]any {
	b, id := base(r, r.Repo.Name), strings.ToLower(v.ID)
	deps := []map[string]any{}
	for _, g := range v.Groups {
		ds := []map[string]string{}
		for _, d := range g.Deps {
			ds = append(ds, map[string]string{"id": d.ID, "range": d.Version})
		}
		deps = append(deps, map[string]any{"targetFramework": g.TargetFramework, "dependencies": ds})
	}
	return map[string]any{
		"@id":            b + "/v3/registration/" + id + "/" + v.norm + ".json",
		"packageContent": b + "/v3/package/" + id + "/" + v.norm + "/" + id + "." + v.norm + ".nupkg",
		"registration":   b + "/v3/registration/" + id + "/index.json",
		"listed":         true,
		"published":      v.art.UploadedAt.UTC().Format("2006-01-02T15:04:05Z"),
		"catalogEntry": map[string]any{"@id": b + "/v3/registration/" + id + "/" + v.norm + ".json", "id": v.ID, "version": v.norm,
			"description": v.Description, "authors": v.Authors, "dependencyGroups": deps, "listed": true,
			"packageContent": b + "/v3/package/" + id + "/" + v.norm + "/" + id + "." + v.norm + ".nupkg"},
	}
}

func (f *Format) registration(ctx context.Context, r *format.Request) (*format.Response, error) {
	vs, err := f.versions(r.Repo, r.Param("id"))
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, format.NotFound("%s is not in repository %s", r.Param("id"), r.Repo.Name)
	}
	items := []map[string]any{}
	for _, v := range vs {
		items = append(items, f.leaf(r, v))
	}
	self := base(r, r.Repo.Name) + "/v3/registration/" + strings.ToLower(r.Param("id")) + "/index.json"
	page := map[string]any{"@id": self + "#page", "lower": vs[0].norm, "upper": vs[len(vs)-1].norm, "count": len(items), "items": items}
	return format.JSON(http.StatusOK, map[string]any{"@id": self, "count": 1, "items": []any{page}}), nil
}

func (f *Format) registrationLeaf(ctx context.Context, r *format.Request) (*format.Response, error) {
	ver, ok := strings.CutSuffix(r.Param("leaf"), ".json")
	vs, err := f.versions(r.Repo, r.Param("id"))
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if ok && v.norm == normalize(ver) {
			return format.JSON(http.StatusOK, f.leaf(r, v)), nil
		}
	}
	return nil, format.NotFound("%s %s is not in repository %s", r.Param("id"), ver, r.Repo.Name)
}

// search finds packages whose id contains q.
func (f *Format) search(ctx context.Context, r *format.Request) (*format.Response, error) {
	q := strings.ToLower(r.Query.Get("q"))
	arts, err := f.Env.List(r.Repo, "")
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, a := range arts {
		if strings.HasSuffix(a.Path, ".nupkg") && strings.Contains(strings.ToLower(a.PackageName), q) {
			ids[strings.ToLower(a.PackageName)] = true
		}
	}
	data := []map[string]any{}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range ids {
			if !yield(k) {
				return
			}
		}
	}) {
		vs, err := f.versions(r.Repo, id)
		if err != nil || len(vs) == 0 {
			continue
		}
		last := vs[len(vs)-1]
		versions := []map[string]any{}
		for _, v := range vs {
			versions = append(versions, map[string]any{"version": v.norm, "downloads": 0, "@id": f.leaf(r, v)["@id"]})
		}
		data = append(data, map[string]any{"id": last.ID, "version": last.norm, "description": last.Description, "authors": last.Authors,
			"versions": versions, "registration": base(r, r.Repo.Name) + "/v3/registration/" + id + "/index.json", "totalDownloads": 0})
	}
	return format.JSON(http.StatusOK, map[string]any{"totalHits": len(data), "data": data}), nil
}

// Credential implements format.CredentialReader: NuGet clients push with
// the API key (an API token) in X-NuGet-ApiKey, and read with Basic.
func (f *Format) Credential(r *format.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		return a
	}
	if key := strings.TrimSpace(r.Header.Get("X-NuGet-ApiKey")); key != "" {
		return "Bearer " + key
	}
	return ""
}

// DeleteArtifact is a REST delete: a package version is its .nupkg and its .nuspec together, so it goes whole, however old its files
// (format.Writer.DeleteVersion).
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	return w.DeleteVersion(ctx, r, a)
}
