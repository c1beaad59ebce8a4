package conda

import (
	"archive/tar"
	"archive/zip"
	"compress/bzip2"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/depot-registry/depot/shared/format"
)

const (
	maxIndexJSON = 1 << 20
	maxUnpacked  = 1 << 30 // what reading up to info/index.json may unpack
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
	rec, err := readIndex(io.NewSectionReader(tmp, 0, size), size, isConda)
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
// in the info-*.tar.zst member of a .conda zip.
func readIndex(pkg io.ReaderAt, size int64, isConda bool) (map[string]any, error) {
	bad := func(why string, args ...any) error { return format.BadRequest("not a conda package: "+why, args...) }
	var tr *tar.Reader
	if isConda {
		zr, err := zip.NewReader(pkg, size)
		if err != nil {
			return nil, bad("%v", err)
		}
		var info *zip.File
		for _, e := range zr.File {
			if strings.HasPrefix(e.Name, "info-") && strings.HasSuffix(e.Name, ".tar.zst") && !strings.Contains(e.Name, "/") {
				info = e
			}
		}
		if info == nil {
			return nil, bad("no info-*.tar.zst member")
		}
		rc, err := info.Open()
		if err != nil {
			return nil, bad("%v", err)
		}
		defer rc.Close()
		dec, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return nil, bad("%v", err)
		}
		defer dec.Close()
		tr = tar.NewReader(io.LimitReader(dec, maxUnpacked))
	} else {
		tr = tar.NewReader(io.LimitReader(bzip2.NewReader(io.NewSectionReader(pkg, 0, size)), maxUnpacked))
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, bad("no info/index.json")
		}
		if err != nil {
			return nil, bad("%v", err)
		}
		if strings.TrimPrefix(h.Name, "./") != "info/index.json" {
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(tr, maxIndexJSON+1))
		if err != nil || len(raw) > maxIndexJSON {
			return nil, bad("info/index.json is unreadable or larger than %d bytes", maxIndexJSON)
		}
		rec := map[string]any{}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, bad("info/index.json: %v", err)
		}
		return rec, nil
	}
}
