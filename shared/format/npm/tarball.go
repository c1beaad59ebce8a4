package npm

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// CheckTarball reads a package tarball through without unpacking it or
// holding it: it must be gzip'd tar whose entries stay inside the package
// directory, within lim, with a package.json at the top of the package
// directory (npm strips the first path component on install). A failure
// to read r itself is returned as it is (not the client's fault).
func CheckTarball(r io.Reader, lim Limits) error {
	src := &errReader{r: r}
	err := checkTarball(bufio.NewReader(src), lim)
	if src.err != nil {
		return src.err
	}
	return err
}

func checkTarball(br *bufio.Reader, lim Limits) error {
	// br is a ByteReader, so gzip reads no further than its member.
	zr, err := gzip.NewReader(br)
	if err != nil {
		return format.BadRequest("tarball is not gzip: %v", err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	var total int64
	entries := 0
	manifest := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return format.BadRequest("malformed tarball: %v", err)
		}
		entries++
		if entries > lim.MaxEntries {
			return format.BadRequest("tarball has more than %d entries", lim.MaxEntries)
		}
		if err := checkEntryName(h.Name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		default:
			return format.BadRequest("tarball entry %q is not a file or directory", h.Name)
		}
		if h.Size < 0 || h.Size > lim.MaxUnpacked-total {
			return format.BadRequest("tarball unpacks to more than %d bytes", lim.MaxUnpacked)
		}
		n, err := io.Copy(io.Discard, tr)
		if err != nil {
			return format.BadRequest("malformed tarball: %v", err)
		}
		total += n
		if h.Typeflag == tar.TypeReg && strings.Count(strings.Trim(h.Name, "/"), "/") == 1 && path.Base(h.Name) == "package.json" {
			manifest = true
		}
	}
	// Reading to the end checks gzip's CRC and length. Only tar's zero
	// padding may follow the archive (a second gzip member is refused by
	// Multistream(false) above): anything more could inflate without bound.
	if n, err := io.Copy(io.Discard, io.LimitReader(zr, maxTrailer+1)); err != nil {
		return format.BadRequest("malformed tarball: %v", err)
	} else if n > maxTrailer {
		return format.BadRequest("malformed tarball: data after the end of the archive")
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return format.BadRequest("malformed tarball: data after the end of the gzip stream")
	}
	if !manifest {
		return format.BadRequest("tarball has no package.json in its package directory")
	}
	return nil
}

// maxTrailer bounds what may follow the tar end marker (tar pads archives
// to a 10 KiB record).
const maxTrailer = 64 << 10

// checkEntryName refuses names that could escape the package directory.
func checkEntryName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") {
		return format.BadRequest("tarball entry %q has an unsafe name", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return format.BadRequest("tarball entry %q climbs out of the package", name)
		}
	}
	return nil
}
