package conda

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

const (
	maxIndexJSON = 256 << 10
	maxRecord    = 64 << 10 // what a package's record (and its repodata entry) keeps
)

var nameRE = regexp.MustCompile(`^[a-z0-9_][a-z0-9_.-]*$`)

// upload stores a package; its metadata is its info/index.json.
func (f *Format) upload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	file, wantSubdir := r.Param("file"), r.Param("subdir")
	isConda := strings.HasSuffix(file, ".conda")
	if !isConda && !strings.HasSuffix(file, ".tar.bz2") {
		return nil, format.BadRequest("a conda package is a .tar.bz2 or a .conda file, not %s", file)
	}
	tmp, size, remove, err := w.SpillUpload(r, "conda", 0)
	if err != nil {
		return nil, err
	}
	defer remove()
	rec, err := readIndex(ctx, io.NewSectionReader(tmp, 0, size), size, isConda)
	if err != nil {
		return nil, err
	}
	name, _ := rec["name"].(string)
	version, _ := rec["version"].(string)
	build, _ := rec["build"].(string)
	subdir, _ := rec["subdir"].(string)
	ext := ".tar.bz2"
	if isConda {
		ext = ".conda"
	}
	if err := checkRecord(rec); err != nil {
		return nil, err
	}
	switch {
	case file != name+"-"+version+"-"+build+ext:
		return nil, format.BadRequest("the file of %s %s %s is %s-%s-%s%s, not %s", name, version, build, name, version, build, ext, file)
	case wantSubdir != "" && wantSubdir != subdir:
		return nil, format.BadRequest("the package is for %s, not %s", subdir, wantSubdir)
	}
	for _, k := range []string{"md5", "sha256", "size"} {
		delete(rec, k) // the file's own, computed when served
	}
	for _, k := range []string{"depends", "constrains"} {
		if _, ok := rec[k].([]any); !ok {
			rec[k] = []any{} // clients want a list, never null
		}
	}
	if _, ok := rec["timestamp"]; !ok {
		rec["timestamp"] = w.Time().UnixMilli()
	}
	attrs, _ := json.Marshal(rec)
	a, idx, err := w.Store(ctx, r, format.Upload{Repo: r.Repo, Path: subdir + "/" + file, Package: name, Version: version,
		ContentType: "application/octet-stream", Body: io.NewSectionReader(tmp, 0, size), Overwrite: format.OverwriteNever, Attrs: attrs})
	if err != nil {
		return nil, err
	}
	resp := format.JSON(http.StatusCreated, format.ViewArtifact(a, r.Repo.Name))
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// readIndex finds info/index.json: in the bzip2'd tar of a .tar.bz2, or
// in the info-*.tar.zst member of a .conda zip. It returns the fields
// repodata.json repeats (indexFields), within maxRecord bytes.
func readIndex(ctx context.Context, pkg io.ReaderAt, size int64, isConda bool) (map[string]any, error) {
	rec, _, err := readPackage(ctx, pkg, size, isConda, false)
	return rec, err
}

// Inspecting reads more of a package's info/ than an upload: its
// description (about.json) and its files (paths.json, or else the list
// in files), which can be long.
const (
	maxInfoMember = 16 << 20
	infoIndex     = "info/index.json"
	infoAbout     = "info/about.json"
	infoPaths     = "info/paths.json"
	infoFiles     = "info/files"
)

// readPackage is the one reading of a conda package: readIndex for an
// upload, and with full also what the inspector answers. A full read of
// a .tar.bz2 ends once the info/ files are read (conda puts them first).
func readPackage(ctx context.Context, pkg io.ReaderAt, size int64, isConda, full bool) (map[string]any, format.PackageInfo, error) {
	var info format.PackageInfo
	index := format.ArchiveRules{What: "a conda package", Limits: format.ArchiveLimits{Member: maxIndexJSON},
		Want: func(name string) bool { return name == infoIndex }}
	if full {
		index.Want = func(name string) bool {
			return name == infoIndex || name == infoAbout || name == infoPaths || name == infoFiles
		}
		index.All, index.Limits.Member = true, maxInfoMember
		index.Done = func(got []format.Member) bool { return len(got) == 4 }
	}
	var ms []format.Member
	var err error
	if isConda {
		ms, err = format.ReadZip(ctx, pkg, size, format.ArchiveRules{What: "a conda package",
			Want: func(name string) bool {
				return strings.HasPrefix(name, "info-") && strings.HasSuffix(name, ".tar.zst") && !strings.Contains(name, "/")
			},
			Stream: func(ctx context.Context, _ string, r io.Reader, packed int64) ([]format.Member, error) {
				return format.ReadTar(ctx, r, packed, format.Zstd, index)
			}})
	} else {
		ms, err = format.ReadTar(ctx, io.NewSectionReader(pkg, 0, size), size, format.Bzip2, index)
	}
	if err != nil {
		return nil, info, err
	}
	members := map[string][]byte{}
	for _, m := range ms {
		members[m.Name] = m.Data
	}
	raw, ok := members[infoIndex]
	if !ok {
		return nil, info, format.BadRequest("not a conda package: no info/index.json")
	}
	if len(raw) > maxIndexJSON || len(members[infoAbout]) > maxIndexJSON {
		return nil, info, format.BadRequest("not a conda package: info/index.json or info/about.json is larger than %d bytes", maxIndexJSON)
	}
	all := map[string]any{}
	if err := format.DecodeJSON(raw, &all, "info/index.json"); err != nil {
		return nil, info, err
	}
	rec, err := format.Record(all, indexFields, maxRecord, "info/index.json")
	if err != nil || !full {
		return rec, info, err
	}
	about := map[string]any{}
	if a, ok := members[infoAbout]; ok {
		if err := format.DecodeJSON(a, &about, "info/about.json"); err != nil {
			return nil, info, err
		}
	}
	info = packageInfo(all, about)
	info.Files, info.FileCount, info.Truncated = packageFiles(members[infoPaths], members[infoFiles])
	return rec, info, nil
}

// checkRecord refuses an index.json record that does not name a package
// (lowercase), a version, a build and a subdir.
func checkRecord(rec map[string]any) error {
	name, version, build, subdir := format.Str(rec["name"]), format.Str(rec["version"]), format.Str(rec["build"]), format.Str(rec["subdir"])
	switch {
	case !nameRE.MatchString(name) || version == "" || strings.ContainsAny(version+build, "/ \\") || build == "":
		return format.BadRequest("info/index.json must give a name (lowercase), a version and a build; it gives %q %q %q", name, version, build)
	case !subdirRE.MatchString(subdir):
		return format.BadRequest("info/index.json's subdir %q is not noarch or <os>-<arch>", subdir)
	}
	return nil
}

// packageInfo is what index.json and about.json say of a package. A
// dependency is "<name> [<version spec> [<build>]]": the name, then the
// rest verbatim.
func packageInfo(index, about map[string]any) format.PackageInfo {
	info := format.PackageInfo{Format: Name, Name: format.Str(index["name"]), Version: format.Str(index["version"]),
		Summary: format.Str(about["summary"]), Description: format.Str(about["description"]),
		Homepage: format.Str(about["home"]), Repository: format.Str(about["dev_url"]), Keywords: format.Strs(about["keywords"])}
	if l := format.Str(index["license"]); l != "" {
		info.Licenses = []string{l}
	} else if l := format.Str(about["license"]); l != "" {
		info.Licenses = []string{l}
	}
	for _, kind := range [][2]string{{"depends", "runtime"}, {"constrains", "constraint"}} {
		for _, spec := range format.Strs(index[kind[0]]) {
			name, constraint, _ := strings.Cut(strings.TrimSpace(spec), " ")
			if name != "" {
				info.Dependencies = append(info.Dependencies, format.Dependency{Name: name, Constraint: strings.TrimSpace(constraint),
					Kind: kind[1], Ecosystem: Name})
			}
		}
	}
	return info
}

// packageFiles lists a package's files from paths.json (path, size,
// sha256), or, when it is missing or past the metadata bounds (a package
// of tens of thousands of files), the paths in info/files, without sizes
// (truncated says so).
func packageFiles(paths, list []byte) (files []format.FileEntry, count int, truncated bool) {
	var pj struct {
		Paths []struct {
			Path   string `json:"_path"`
			Size   int64  `json:"size_in_bytes"`
			SHA256 string `json:"sha256"`
		} `json:"paths"`
	}
	if paths != nil && format.DecodeJSON(paths, &pj, "info/paths.json") == nil {
		for _, p := range pj.Paths {
			if len(files) < format.MaxInfoFiles {
				files = append(files, format.FileEntry{Path: p.Path, Size: p.Size, SHA256: p.SHA256})
			}
		}
		return files, len(pj.Paths), false
	}
	for line := range strings.Lines(string(list)) {
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			if count++; len(files) < format.MaxInfoFiles {
				files = append(files, format.FileEntry{Path: line})
			}
		}
	}
	return files, count, count > 0
}

// indexFields are the fields of info/index.json a package's record in
// repodata.json carries (md5, sha256 and size are the file's own).
var indexFields = []string{"name", "version", "build", "build_number", "depends", "constrains", "license", "license_family",
	"subdir", "timestamp", "noarch", "platform", "arch", "features", "track_features"}
