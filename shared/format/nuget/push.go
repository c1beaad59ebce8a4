package nuget

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

const (
	maxNuspec = 256 << 10
	maxDeps   = 1000
)

var (
	idRE      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)
	versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+){1,3}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// normalize is NuGet's normalized version, lowercase: no build metadata,
// at least three parts, no fourth part that is 0.
func normalize(v string) string {
	v, _, _ = strings.Cut(strings.ToLower(v), "+")
	core, pre, hasPre := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	if len(parts) == 4 && parts[3] == "0" {
		parts = parts[:3]
	}
	for i, p := range parts {
		if t := strings.TrimLeft(p, "0"); t == "" {
			parts[i] = "0"
		} else {
			parts[i] = t
		}
	}
	out := strings.Join(parts, ".")
	if hasPre {
		out += "-" + pre
	}
	return out
}

// nuspec is what is read of a package's manifest.
type nuspec struct {
	Metadata struct {
		ID          string `xml:"id"`
		Version     string `xml:"version"`
		Description string `xml:"description"`
		Summary     string `xml:"summary"`
		Authors     string `xml:"authors"`
		Tags        string `xml:"tags"`
		ProjectURL  string `xml:"projectUrl"`
		License     string `xml:"license"`
		LicenseURL  string `xml:"licenseUrl"`
		Repository  struct {
			URL string `xml:"url,attr"`
		} `xml:"repository"`
		PackageTypes struct {
			Types []struct {
				Name string `xml:"name,attr"`
			} `xml:"packageType"`
		} `xml:"packageTypes"`
		Dependencies struct {
			Groups []struct {
				TargetFramework string `xml:"targetFramework,attr"`
				Deps            []dep  `xml:"dependency"`
			} `xml:"group"`
			Deps []dep `xml:"dependency"` // the old layout, without groups
		} `xml:"dependencies"`
	} `xml:"metadata"`
}

type dep struct {
	ID      string `xml:"id,attr" json:"id"`
	Version string `xml:"version,attr" json:"range"`
}

// pkg is a stored version: its Attrs.
type pkg struct {
	ID          string  `json:"id"`
	Version     string  `json:"version"`
	Description string  `json:"description"`
	Authors     string  `json:"authors"`
	Groups      []group `json:"groups"`
}

type group struct {
	TargetFramework string `json:"targetFramework"`
	Deps            []dep  `json:"dependencies"`
}

// readNupkg reads the .nuspec at the root of a .nupkg (a zip), returning
// the package's record and the manifest's bytes.
func readNupkg(ctx context.Context, r io.ReaderAt, size int64) (pkg, []byte, error) {
	p, raw, _, err := readPackage(ctx, r, size)
	return p, raw, err
}

// readPackage is the one reading of a .nupkg, for uploads (readNupkg) and
// inspections: also what the inspector answers, with the zip's files.
func readPackage(ctx context.Context, r io.ReaderAt, size int64) (pkg, []byte, format.PackageInfo, error) {
	files := &format.FileList{}
	ms, err := format.ReadZip(ctx, r, size, format.ArchiveRules{What: "a .nupkg", Limits: format.ArchiveLimits{Member: maxNuspec},
		Check: files.Check(nil),
		Want: func(name string) bool {
			return !strings.Contains(name, "/") && strings.HasSuffix(strings.ToLower(name), ".nuspec")
		}})
	if err != nil {
		return pkg{}, nil, format.PackageInfo{}, err
	}
	for _, e := range ms {
		p, info, err := parseNuspec(e.Data)
		if err != nil {
			return pkg{}, nil, format.PackageInfo{}, err
		}
		files.Fill(&info)
		return p, e.Data, info, nil
	}
	return pkg{}, nil, format.PackageInfo{}, format.BadRequest("the .nupkg has no .nuspec at its root")
}

// parseNuspec is the one parser of a .nuspec: the version's record, and
// what the inspector answers.
func parseNuspec(raw []byte) (pkg, format.PackageInfo, error) {
	var n nuspec
	if err := xml.Unmarshal(raw, &n); err != nil {
		return pkg{}, format.PackageInfo{}, format.BadRequest("the .nuspec is not XML: %v", err)
	}
	m := n.Metadata
	for _, t := range m.PackageTypes.Types {
		if t.Name == "SymbolsPackage" {
			return pkg{}, format.PackageInfo{}, format.BadRequest("symbol packages (.snupkg) are not supported: push the .nupkg only")
		}
	}
	if !idRE.MatchString(m.ID) || !versionRE.MatchString(m.Version) {
		return pkg{}, format.PackageInfo{}, format.BadRequest("the .nuspec's id %q or version %q is not valid", m.ID, m.Version)
	}
	// The record keeps what the feeds serve, bounded.
	p := pkg{ID: m.ID, Version: m.Version, Description: format.Clip(m.Description, 4096), Authors: format.Clip(m.Authors, 512), Groups: []group{}}
	deps := len(m.Dependencies.Deps)
	for _, g := range m.Dependencies.Groups {
		deps += len(g.Deps)
	}
	if deps > maxDeps || len(m.Dependencies.Groups) > maxDeps {
		return pkg{}, format.PackageInfo{}, format.BadRequest("the .nuspec has more than %d dependencies", maxDeps)
	}
	for _, g := range m.Dependencies.Groups {
		p.Groups = append(p.Groups, group{TargetFramework: g.TargetFramework, Deps: g.Deps})
	}
	if len(m.Dependencies.Deps) > 0 {
		p.Groups = append(p.Groups, group{Deps: m.Dependencies.Deps})
	}
	info := format.PackageInfo{Format: Name, Name: m.ID, Version: normalize(m.Version), Summary: strings.TrimSpace(m.Summary),
		Description: strings.TrimSpace(m.Description), Homepage: strings.TrimSpace(m.ProjectURL), Repository: m.Repository.URL,
		Keywords: strings.Fields(strings.ReplaceAll(m.Tags, ",", " "))}
	if info.Summary == "" {
		info.Summary, info.Description = info.Description, ""
	}
	// <license> is an SPDX expression (or names a file in the package);
	// older packages only link to one.
	if l := strings.TrimSpace(m.License); l != "" {
		info.Licenses = []string{l}
	} else if u := strings.TrimSpace(m.LicenseURL); u != "" {
		info.Licenses = []string{u}
	}
	for _, g := range p.Groups {
		for _, d := range g.Deps {
			info.Dependencies = append(info.Dependencies, format.Dependency{Name: d.ID, Constraint: d.Version, Kind: "runtime",
				Condition: g.TargetFramework, Ecosystem: Name})
		}
	}
	return p, info, nil
}

// push takes a package: multipart (the file part) or the raw .nupkg.
func (f *Format) push(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	tmp, size, remove, err := w.SpillUpload(r, "nuget", 0)
	if err != nil {
		return nil, err
	}
	defer remove()
	var file io.ReaderAt = tmp
	if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		start, end, err := onlyPart(tmp, size, params["boundary"])
		if err != nil {
			return nil, err
		}
		file, size = io.NewSectionReader(tmp, start, end-start), end-start
	}
	p, manifest, err := readNupkg(ctx, file, size)
	if err != nil {
		return nil, err
	}
	nupkgInfo, err := w.PutBlob(ctx, io.NewSectionReader(file, 0, size), blob.Checksums{})
	if err != nil {
		return nil, err
	}
	specInfo, err := w.PutBlob(ctx, strings.NewReader(string(manifest)), blob.Checksums{})
	if err != nil {
		return nil, err
	}
	id, ver := strings.ToLower(p.ID), normalize(p.Version)
	attrs, _ := json.Marshal(p)
	idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		if _, err := tx.ArtifactByPath(r.Repo.ID, nupkgPath(id, ver)); err == nil {
			return nil, format.Conflict("%s %s is already in repository %s", p.ID, ver, r.Repo.Name)
		} else if !errors.Is(err, meta.ErrNotFound) {
			return nil, err
		}
		file := func(path, ct string, info blob.Info) format.Placed {
			return format.Placed{Upload: format.Upload{Path: path, Package: p.ID, Version: ver, ContentType: ct, Attrs: attrs}, Info: info}
		}
		return w.ChangeCmd(r, r.Repo, nil, []format.Placed{file(nupkgPath(id, ver), "application/octet-stream", nupkgInfo),
			format.Quiet(file(id+"/"+ver+"/"+id+".nuspec", "application/xml", specInfo))}, nil)
	})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusCreated)
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// onlyPart finds the one part of a multipart body (the package) in a file:
// from the end of its headers to the closing delimiter. nuget 2.x ends
// the part with "\n--boundary--", without the "\r" the multipart reader
// insists on, so the delimiter is looked for by hand, either way.
func onlyPart(f io.ReaderAt, size int64, boundary string) (start, end int64, err error) {
	bad := format.BadRequest("the multipart body does not hold one package part")
	if boundary == "" {
		return 0, 0, bad
	}
	head := make([]byte, min(size, 16<<10))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	open := []byte("--" + boundary)
	i := bytes.Index(head, open)
	j := bytes.Index(head[max(i, 0):], []byte("\r\n\r\n"))
	if i != 0 || j < 0 {
		return 0, 0, bad
	}
	start = int64(j) + 4
	tail := make([]byte, min(size-start, 1<<10))
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	k := bytes.LastIndex(tail, append([]byte("\n"), open...))
	if k < 0 {
		return 0, 0, bad
	}
	end = size - int64(len(tail)) + int64(k)
	if end > start && k > 0 && tail[k-1] == '\r' {
		end--
	}
	if end < start {
		return 0, 0, bad
	}
	return start, end, nil
}

func nupkgPath(id, ver string) string { return id + "/" + ver + "/" + id + "." + ver + ".nupkg" }

// remove deletes a version (NuGet's delete/unlist): both its files.
func (f *Format) remove(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	id, ver := strings.ToLower(r.Param("id")), normalize(r.Param("version"))
	idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		arts, err := tx.ArtifactsUnder(r.Repo.ID, id+"/"+ver+"/")
		if err != nil {
			return nil, err
		}
		if len(arts) == 0 {
			return nil, format.NotFound("%s %s is not in repository %s", r.Param("id"), ver, r.Repo.Name)
		}
		var drop []*meta.Artifact
		for i := range arts {
			drop = append(drop, &arts[i])
		}
		return w.ChangeCmd(r, r.Repo, drop, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusNoContent)
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// PackagePath is where a package of id at version is kept (id in lower
// case, the version normalised), for an importer finding one it moved.
func PackagePath(id, version string) string {
	return nupkgPath(strings.ToLower(id), normalize(version))
}
