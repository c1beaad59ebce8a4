package rubygems

import (
	"context"
	"io"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored .gem with the reader its upload uses
// (readGemFile): the gemspec's name, version (with its platform, as the
// artifact's), summary, description, homepage, licences, source_code_uri
// and dependencies (runtime and dev, requirements as gem writes them),
// and the files of data.tar.gz.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	_, info, err := readGemFile(ctx, io.NewSectionReader(s.File, 0, s.Size), s.Size, &format.FileList{})
	if err != nil {
		return format.PackageInfo{}, err
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
