package composer

import (
	"context"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored package zip as its upload does (readPackage):
// composer.json's name, version (else the one in the artifact path,
// <vendor>/<name>/<version>/<file>, where an upload's ?version= put it),
// description, homepage, licences, keywords, support.source, require
// (runtime) and require-dev (dev) with their constraints, and the zip's
// files.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	var version string
	if parts := strings.Split(s.Path, "/"); len(parts) == 4 {
		version = parts[2]
	}
	zp, err := readPackage(ctx, s.File, s.Size, version)
	if err != nil {
		return format.PackageInfo{}, err
	}
	zp.info.Size = s.Size
	return zp.info.Bounded(), nil
}
