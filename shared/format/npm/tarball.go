package npm

import (
	"context"
	"io"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// CheckTarball reads a package tarball of size bytes through without unpacking it or
// holding it (format.ReadTar): it must be a gzip'd tar, with nothing
// after it, whose entries are files and directories that stay inside the
// package directory, within lim, with a package.json at the top of the
// package directory (npm strips the first path component on install). A
// failure to read r itself is returned as it is (not the client's fault).
func CheckTarball(r io.Reader, size int64, lim Limits) error {
	src := &errReader{r: r}
	ms, err := format.ReadTar(context.Background(), src, size, format.Gzip, format.ArchiveRules{What: "an npm package tarball",
		All: true, Exact: true, Limits: format.ArchiveLimits{Entries: lim.MaxEntries, Unpacked: lim.MaxUnpacked},
		Check: func(e format.Entry) error {
			if !e.Regular && !e.Dir {
				return format.BadRequest("tarball entry %q is not a file or directory", e.Name)
			}
			return nil
		},
		Want: func(name string) bool { return strings.Count(name, "/") == 1 && path.Base(name) == "package.json" }})
	if src.err != nil {
		return src.err
	}
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		return format.BadRequest("tarball has no package.json in its package directory")
	}
	return nil
}
