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
	switch {
	case !nameRE.MatchString(name) || version == "" || strings.ContainsAny(version+build, "/ \\") || build == "":
		return nil, format.BadRequest("info/index.json must give a name (lowercase), a version and a build; it gives %q %q %q", name, version, build)
	case !subdirRE.MatchString(subdir):
		return nil, format.BadRequest("info/index.json's subdir %q is not noarch or <os>-<arch>", subdir)
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
	index := format.ArchiveRules{What: "a conda package", Limits: format.ArchiveLimits{Member: maxIndexJSON},
		Want: func(name string) bool { return name == "info/index.json" }}
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
		return nil, err
	}
	if len(ms) == 0 {
		return nil, format.BadRequest("not a conda package: no info/index.json")
	}
	all := map[string]any{}
	if err := format.DecodeJSON(ms[0].Data, &all, "info/index.json"); err != nil {
		return nil, err
	}
	return format.Record(all, indexFields, maxRecord, "info/index.json")
}

// indexFields are the fields of info/index.json a package's record in
// repodata.json carries (md5, sha256 and size are the file's own).
var indexFields = []string{"name", "version", "build", "build_number", "depends", "constrains", "license", "license_family",
	"subdir", "timestamp", "noarch", "platform", "arch", "features", "track_features"}
