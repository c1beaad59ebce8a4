package generic

import (
	"context"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect implements format.Inspector: a generic file is opaque, so its
// package and version are its path's, <package>/<version>/<filename>
// (ParsePath, as its upload reads them), and its one file is itself; its
// bytes are not read.
func (f *Format) Inspect(_ context.Context, s format.Stored) (format.PackageInfo, error) {
	c, err := ParsePath("repo/" + s.Path)
	if err != nil {
		return format.PackageInfo{}, err
	}
	return format.PackageInfo{Format: Name, Name: c.Package, Version: c.Version, Size: s.Size,
		Files: []format.FileEntry{{Path: c.File, Size: s.Size}}, FileCount: 1}.Bounded(), nil
}
