package conda

import (
	"context"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored package, a .conda or a .tar.bz2 as its path
// says, with the reader its upload uses (readPackage): index.json's name,
// version, licence, depends (runtime) and constrains (constraint),
// about.json's summary, description, home and dev_url, and the files
// paths.json lists with their sizes and sha256.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	isConda := strings.HasSuffix(s.Path, ".conda")
	if !isConda && !strings.HasSuffix(s.Path, ".tar.bz2") {
		return format.PackageInfo{}, format.BadRequest("a conda package is a .tar.bz2 or a .conda file, not %s", s.Path)
	}
	rec, info, err := readPackage(ctx, s.File, s.Size, isConda, true)
	if err != nil {
		return format.PackageInfo{}, err
	}
	if err := checkRecord(rec); err != nil {
		return format.PackageInfo{}, err
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
