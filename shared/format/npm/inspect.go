package npm

import (
	"context"
	"encoding/json"
	"io"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored package tarball with the reader a publish uses
// (readTarball), and its package.json with the one manifest reader
// (manifestFields): name, version, description, licence, homepage,
// repository, keywords, dependencies (runtime), devDependencies (dev),
// peerDependencies (peer; optional when peerDependenciesMeta says so) and
// optionalDependencies (optional), ranges verbatim; and the tarball's
// files. The version manifest a publish stores beside the tarball (the
// artifact's Attrs) is the package.json npm sent, read the same way.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	files := &format.FileList{}
	raw, err := readTarball(ctx, io.NewSectionReader(s.File, 0, s.Size), s.Size, DefaultLimits, files)
	if err != nil {
		return format.PackageInfo{}, err
	}
	var fields map[string]json.RawMessage
	if err := format.DecodeJSON(raw, &fields, "package.json"); err != nil {
		return format.PackageInfo{}, err
	}
	m := manifestFields(fields)
	if m.name == "" || m.version == "" {
		return format.PackageInfo{}, format.BadRequest("package.json gives no name or no version")
	}
	info := m.info()
	info.Size = s.Size
	files.Fill(&info)
	return info.Bounded(), nil
}

// TarballManifest is the package.json of a package tarball of size
// bytes, read by the rules a publish checks tarballs by (an importer
// rebuilding a publish from a tarball).
func TarballManifest(ctx context.Context, r io.Reader, size int64) ([]byte, error) {
	return readTarball(ctx, r, size, DefaultLimits, nil)
}
