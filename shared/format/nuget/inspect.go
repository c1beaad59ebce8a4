package nuget

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored .nupkg with the reader its push uses
// (readPackage), or a stored .nuspec with the same parser (parseNuspec):
// id, normalized version, summary and description, projectUrl,
// repository url, tags, the licence expression (or licence URL), and the
// dependencies of every group with their version ranges, the group's
// target framework as their condition; for a .nupkg, the zip's files.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	var info format.PackageInfo
	var err error
	switch p := strings.ToLower(s.Path); {
	case strings.HasSuffix(p, ".nupkg"):
		_, _, info, err = readPackage(ctx, s.File, s.Size)
	case strings.HasSuffix(p, ".nuspec"):
		if s.Size > maxNuspec {
			return format.PackageInfo{}, format.BadRequest("a .nuspec is at most %d bytes", maxNuspec)
		}
		raw := make([]byte, s.Size)
		if _, err := s.File.ReadAt(raw, 0); err != nil && !errors.Is(err, io.EOF) {
			return format.PackageInfo{}, err
		}
		_, info, err = parseNuspec(raw)
	default:
		return format.PackageInfo{}, format.BadRequest("a NuGet package is a .nupkg or its .nuspec, not %s", s.Path)
	}
	if err != nil {
		return format.PackageInfo{}, err
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
