// Package conda serves conda channels at /conda/<repo>: channeldata.json,
// <subdir>/repodata.json (and .json.zst), and the packages, .tar.bz2 and
// .conda, at <subdir>/<file> where clients build their URLs. A package is
// uploaded with PUT /conda/<repo>/<subdir>/<file> (or /conda/<repo>/<file>):
// its metadata is read from info/index.json inside it, and the file name
// and subdir must agree with it. The artifact is "<subdir>/<file>", its
// Attrs the index.json record.
package conda

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "conda"

// Format is the conda channel.
type Format struct {
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/conda")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/channeldata.json", Action: meta.ActionRead, Read: f.channeldata},
		{Method: http.MethodGet, Path: "/{repo}/{subdir}/{file}", Action: meta.ActionRead, Read: f.get},
		{Method: http.MethodPut, Path: "/{repo}/{subdir}/{file}", Action: meta.ActionWrite, Write: f.upload},
		{Method: http.MethodPut, Path: "/{repo}/{file}", Action: meta.ActionWrite, Write: f.upload},
	}
}

// Error renders {"error": ...}; 401 challenges for Basic.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.JSONError)
}

// subdirRE: noarch or <os>-<arch>.
var subdirRE = regexp.MustCompile(`^(noarch|[a-z0-9]+-[a-z0-9_]+)$`)

// records are the repository's packages in subdir ("" for all) by path, each an index.json record with the file's hashes and size.
func (f *Format) records(repo *meta.Repository, subdir string) (map[string]map[string]any, error) {
	prefix := ""
	if subdir != "" {
		prefix = subdir + "/"
	}
	arts, err := f.Env.List(repo, prefix)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, a := range arts {
		rec := map[string]any{}
		if json.Unmarshal(a.Attrs, &rec) != nil {
			continue
		}
		rec["md5"], rec["sha256"], rec["size"] = a.Checksums.MD5, a.Checksums.SHA256, a.SizeBytes
		out[a.Path] = rec
	}
	return out, nil
}

func (f *Format) get(ctx context.Context, r *format.Request) (*format.Response, error) {
	subdir, file := r.Param("subdir"), r.Param("file")
	if !subdirRE.MatchString(subdir) {
		return nil, format.NotFound("%s is not a subdir", subdir)
	}
	switch file {
	case "repodata.json", "repodata.json.zst":
		return f.repodata(r, subdir, file == "repodata.json.zst")
	}
	a, err := f.Env.Artifact(r.Repo, subdir+"/"+file)
	if errors.Is(err, meta.ErrNotFound) {
		// Also the variants not offered (.bz2, current_repodata, shards,
		// jlap): clients then fall back to repodata.json.
		return nil, format.NotFound("%s/%s is not in channel %s", subdir, file, r.Repo.Name)
	}
	if err != nil {
		return nil, err
	}
	return f.Env.Serve(r, a, false)
}

// repodata is the subdir's index, valid (and empty) for any subdir
// without packages: a client calls a channel broken when one is missing.
func (f *Format) repodata(r *format.Request, subdir string, zst bool) (*format.Response, error) {
	recs, err := f.records(r.Repo, subdir)
	if err != nil {
		return nil, err
	}
	tarBz2, condaPkgs := map[string]any{}, map[string]any{}
	for path, rec := range recs {
		file := strings.TrimPrefix(path, subdir+"/")
		if strings.HasSuffix(file, ".conda") {
			condaPkgs[file] = rec
		} else {
			tarBz2[file] = rec
		}
	}
	body, err := json.Marshal(map[string]any{"info": map[string]string{"subdir": subdir}, "packages": tarBz2,
		"packages.conda": condaPkgs, "removed": []string{}, "repodata_version": 1})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/json")
	if zst {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		body = enc.EncodeAll(body, nil)
		resp.Header.Set("Content-Type", "application/zstd")
	}
	resp.Body = body
	return resp, nil
}

func (f *Format) channeldata(ctx context.Context, r *format.Request) (*format.Response, error) {
	recs, err := f.records(r.Repo, "")
	if err != nil {
		return nil, err
	}
	type pkg struct {
		Subdirs []string `json:"subdirs"`
		Version string   `json:"version"`
	}
	pkgs, subdirs := map[string]*pkg{}, []string{"noarch"}
	for path, rec := range recs {
		subdir := path[:strings.IndexByte(path, '/')]
		name, _ := rec["name"].(string)
		version, _ := rec["version"].(string)
		p := pkgs[name]
		if p == nil {
			p = &pkg{}
			pkgs[name] = p
		}
		if !slices.Contains(p.Subdirs, subdir) {
			p.Subdirs = append(p.Subdirs, subdir)
			slices.Sort(p.Subdirs)
		}
		if p.Version == "" || format.CompareDotted(version, p.Version) > 0 {
			p.Version = version
		}
		if !slices.Contains(subdirs, subdir) {
			subdirs = append(subdirs, subdir)
		}
	}
	slices.Sort(subdirs)
	resp := format.JSON(http.StatusOK, map[string]any{"channeldata_version": 1, "packages": pkgs, "subdirs": subdirs})
	return resp, nil
}
