package helm

import (
	"context"
	"io"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored chart archive as its upload does (parseChart):
// Chart.yaml's name, version, description, home, first source, keywords,
// licence annotation and dependencies (version ranges verbatim, a
// condition or tags as the condition), and the archive's files.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	_, info, err := parseChart(ctx, io.NewSectionReader(s.File, 0, s.Size), s.Size)
	if err != nil {
		return format.PackageInfo{}, err
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
