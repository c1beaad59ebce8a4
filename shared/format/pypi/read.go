package pypi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// fileAttrs is the pypi record of one file, kept in Artifact.Attrs.
type fileAttrs struct {
	Name            string       `json:"name"` // display name as uploaded
	Filename        string       `json:"filename"`
	Filetype        string       `json:"filetype"`
	PyVersion       string       `json:"pyversion,omitempty"`
	RequiresPython  string       `json:"requires_python,omitempty"`
	Summary         string       `json:"summary,omitempty"`
	MetadataVersion string       `json:"metadata_version,omitempty"`
	Metadata        *metadataRef `json:"metadata,omitempty"`
}

// metadataRef points at the METADATA blob extracted from a wheel. GC must
// treat Digest as referenced by the artifact.
type metadataRef struct {
	Digest string `json:"digest"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

func attrsOf(a *meta.Artifact) fileAttrs {
	var at fileAttrs
	_ = json.Unmarshal(a.Attrs, &at) // a foreign record just shows less
	if at.Filename == "" {
		at.Filename = a.Path[strings.LastIndexByte(a.Path, '/')+1:]
	}
	return at
}

// projectList serves /simple/: one entry per project that has files, in
// name order, under the spelling of its newest upload. The spellings are
// kept in the keys of the format keyspace (nameKey), so the list reads no
// artifact and decodes no record; a project uploaded before they were
// kept is named from its newest file.
func (f *Format) projectList(_ context.Context, r *format.Request) (*format.Response, error) {
	repo := r.Repo
	var projects []Project
	err := f.Env.View(func(tx *meta.Tx) error {
		display := map[string]string{}
		tx.KVKeys(repo.ID, keyName, func(k string) bool {
			if norm, name, ok := strings.Cut(strings.TrimPrefix(k, keyName), "/"); ok {
				display[norm] = name
			}
			return true
		})
		var err error
		tx.PackageNames(repo.ID, func(norm string) bool {
			name, ok := display[norm]
			if !ok {
				if name, err = newestSpelling(tx, repo, norm); err != nil {
					return false
				}
			}
			projects = append(projects, Project{Name: name, URL: format.URL(r, r.Prefix, repo.Name, "simple", norm) + "/"})
			return true
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return page(r, RenderProjectList, projects), nil
}

// newestSpelling is the name as uploaded of the newest file of a project
// (the last in path order among equals), or the normalized name.
func newestSpelling(tx *meta.Tx, repo *meta.Repository, norm string) (string, error) {
	arts, err := tx.ArtifactsUnder(repo.ID, norm+"/")
	if err != nil {
		return "", err
	}
	name, newest := norm, -1
	for i := range arts {
		if arts[i].PackageName != norm {
			continue
		}
		if at := attrsOf(&arts[i]); at.Name != "" && (newest < 0 || !arts[i].UploadedAt.Before(arts[newest].UploadedAt)) {
			name, newest = at.Name, i
		}
	}
	return name, nil
}

// projectPage serves /simple/<project>/. A name that is not normalized is
// redirected to the normalized page (PEP 503 allows it), so each project
// has one URL.
func (f *Format) projectPage(_ context.Context, r *format.Request) (*format.Response, error) {
	repo := r.Repo
	name := r.Param("project")
	if err := CheckName(name); err != nil {
		return nil, format.NotFound("project %q not found", trunc(name))
	}
	norm := Normalize(name)
	if norm != name {
		resp := format.NewResponse(http.StatusMovedPermanently)
		resp.Header.Set("Location", format.URL(r, r.Prefix, repo.Name, "simple", norm)+"/")
		return resp, nil
	}
	arts, err := f.Env.List(repo, norm+"/")
	if err != nil {
		return nil, err
	}
	if len(arts) == 0 {
		return nil, format.NotFound("project %s not found in repository %s", norm, repo.Name)
	}
	sort.SliceStable(arts, func(i, j int) bool { return arts[i].UploadedAt.Before(arts[j].UploadedAt) })
	display := norm
	files := make([]IndexFile, 0, len(arts))
	for i := range arts {
		a := &arts[i]
		at := attrsOf(a)
		if at.Name != "" {
			display = at.Name
		}
		file := IndexFile{Filename: at.Filename, SHA256: a.Checksums.SHA256, RequiresPython: at.RequiresPython,
			Size: a.SizeBytes, UploadTime: a.UploadedAt, Version: a.Version,
			URL: format.URL(r, r.Prefix, repo.Name, "files", norm, a.Version, at.Filename)}
		if at.Metadata != nil {
			file.MetadataSHA256 = at.Metadata.SHA256
		}
		files = append(files, file)
	}
	return page(r, func(ct string, files []IndexFile) []byte { return RenderProject(ct, display, files) }, files), nil
}

// page answers a simple-index document in the negotiated type.
func page[T any](r *format.Request, render func(string, []T) []byte, items []T) *format.Response {
	ct := Negotiate(r.Header.Get("Accept"))
	resp := format.NewResponse(http.StatusOK)
	resp.Body = render(ct, items)
	if ct == TypeTextHTML {
		ct += "; charset=utf-8"
	}
	resp.Header.Set("Content-Type", ct)
	resp.Header.Set("Vary", "Accept")
	return resp
}

// file serves a distribution, or with ".metadata" appended the METADATA
// read out of a wheel at upload (PEP 658).
func (f *Format) file(_ context.Context, r *format.Request) (*format.Response, error) {
	repo := r.Repo
	project, version, filename := r.Param("project"), r.Param("version"), r.Param("filename")
	for _, s := range []string{project, version, filename} {
		if err := format.CheckSegment("path segment", s); err != nil {
			return nil, err
		}
	}
	dist, isMeta := strings.CutSuffix(filename, ".metadata")
	a, err := f.Env.Artifact(repo, project+"/"+version+"/"+dist)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s not found in repository %s", filename, repo.Name)
	}
	if err != nil {
		return nil, err
	}
	if !isMeta {
		return f.Env.Serve(r, a, false)
	}
	at := attrsOf(a)
	if at.Metadata == nil {
		return nil, format.NotFound("%s has no metadata file", dist)
	}
	// Not a download of the artifact: pip reads it to resolve, then
	// fetches the wheel itself.
	resp := format.NewResponse(http.StatusOK)
	resp.Blob = &format.BlobRef{Digest: at.Metadata.Digest, Size: at.Metadata.Size}
	resp.Name, resp.ModTime = filename, a.UploadedAt
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Header.Set("ETag", `"`+at.Metadata.SHA256+`"`)
	format.SetContentSafety(resp.Header) // the uploader wrote it
	return resp, nil
}
