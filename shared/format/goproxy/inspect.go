package goproxy

import (
	"context"
	"errors"
	"io"
	"strings"

	"golang.org/x/mod/module"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored module zip with the reader its upload uses
// (readModule, parseGoMod): module and version from its entries, the
// require lines of its go.mod (versions as written; "indirect" for those
// marked so) and its files. A stored .mod (<module>/@v/<version>.mod) is
// read with the same go.mod parser. The go command's own checks of a zip's
// files (case collisions, sizes), which need it as a file on disk, stay
// with the upload.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	var info format.PackageInfo
	switch {
	case strings.HasSuffix(s.Path, ".zip"):
		files := &format.FileList{}
		mv, mod, err := readModule(ctx, s.File, s.Size, files)
		if err != nil {
			return info, err
		}
		if _, info, err = parseGoMod(mv, mod); err != nil {
			return info, err
		}
		files.Fill(&info)
	case strings.HasSuffix(s.Path, ".mod"):
		modPath, file, ok := strings.Cut(s.Path, "/@v/")
		mv := module.Version{Path: modPath, Version: strings.TrimSuffix(file, ".mod")}
		if !ok || module.Check(mv.Path, mv.Version) != nil {
			return info, format.BadRequest("a stored go.mod is at <module>/@v/<version>.mod, not %s", s.Path)
		}
		if s.Size > maxMod {
			return info, format.BadRequest("go.mod is larger than %d bytes", maxMod)
		}
		mod := make([]byte, s.Size)
		if _, err := s.File.ReadAt(mod, 0); err != nil && !errors.Is(err, io.EOF) {
			return info, err
		}
		var err error
		if _, info, err = parseGoMod(mv, mod); err != nil {
			return info, err
		}
	default:
		return info, format.BadRequest("a module is stored as its .zip and its .mod, not %s", s.Path)
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
