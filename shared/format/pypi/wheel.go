package pypi

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// WheelLimits bound what is read out of a wheel. Only the central
// directory and the METADATA entry are read; nothing goes to disk.
type WheelLimits struct {
	MaxEntries   int   // files in the archive
	MaxDirectory int64 // bytes of the central directory
	MaxMetadata  int64 // uncompressed bytes of METADATA
}

// DefaultWheelLimits are far above real wheels (the largest have a few
// ten thousand files) and far below what would hurt memory.
var DefaultWheelLimits = WheelLimits{MaxEntries: 50000, MaxDirectory: 16 << 20, MaxMetadata: 4 << 20}

// eocdLen is the size of the zip end-of-central-directory record.
const eocdLen = 22

// budgetReaderAt refuses reads once left bytes have been read.
type budgetReaderAt struct {
	ra   io.ReaderAt
	left int64
}

var errBudget = errors.New("archive reads past its declared central directory")

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, errBudget
	}
	b.left -= int64(len(p))
	return b.ra.ReadAt(p, off)
}

// CoreMetadata is what the index needs from a METADATA file.
type CoreMetadata struct {
	MetadataVersion string
	Name            string
	Version         string
	RequiresPython  string
}

func badWheel(msg string, args ...any) error {
	return format.BadRequest("invalid wheel: "+msg, args...)
}

// WheelMetadata returns the METADATA file of the wheel d (parsed from its
// file name) read from ra, and its parsed core fields. The archive must be
// a well-formed, non-zip64 zip within lim, with safe entry names and
// exactly one "<name>-<version>.dist-info/METADATA" for d's project.
func WheelMetadata(ra io.ReaderAt, size int64, d Dist, lim WheelLimits) ([]byte, CoreMetadata, error) {
	var cm CoreMetadata
	if err := checkDirectoryEnd(ra, size, lim); err != nil {
		return nil, cm, err
	}
	// archive/zip reads directory entries until one fails to parse, not
	// as many as the end record says: a byte budget bounds what it can
	// read (and so allocate) whatever the archive claims.
	budget := &budgetReaderAt{ra: ra, left: lim.MaxDirectory + 2*(eocdLen+65535)}
	zr, err := zip.NewReader(budget, size)
	if err != nil {
		return nil, cm, badWheel("not a zip archive (%v)", err)
	}
	if len(zr.File) > lim.MaxEntries {
		return nil, cm, badWheel("more than %d entries", lim.MaxEntries)
	}
	var found *zip.File
	seen := make(map[string]bool, len(zr.File))
	for _, f := range zr.File {
		if err := checkEntryName(f.Name); err != nil {
			return nil, cm, err
		}
		if seen[f.Name] {
			return nil, cm, badWheel("duplicate entry %q", trunc(f.Name))
		}
		seen[f.Name] = true
		dir, file, ok := strings.Cut(f.Name, "/")
		if !ok || file != "METADATA" {
			continue
		}
		stem, ok := strings.CutSuffix(dir, ".dist-info")
		if !ok {
			continue
		}
		n, v, ok := strings.Cut(stem, "-")
		if !ok || Normalize(n) != Normalize(d.Name) || !sameVersion(v, d.Version) {
			continue
		}
		if found != nil {
			return nil, cm, badWheel("more than one .dist-info/METADATA")
		}
		found = f
	}
	if found == nil {
		return nil, cm, badWheel("no %s-%s.dist-info/METADATA", d.Name, d.Version)
	}
	if found.UncompressedSize64 > uint64(lim.MaxMetadata) {
		return nil, cm, badWheel("METADATA is larger than %d bytes", lim.MaxMetadata)
	}
	budget.left = 2*lim.MaxMetadata + 1<<16 // METADATA's local header and (compressed) data
	rc, err := found.Open()
	if err != nil {
		return nil, cm, badWheel("METADATA cannot be read (%v)", err)
	}
	defer rc.Close()
	// The header's size is the client's word: read at most the limit, and
	// let the zip reader's CRC and size checks at EOF catch a lie.
	data, err := io.ReadAll(io.LimitReader(rc, lim.MaxMetadata+1))
	if err != nil {
		return nil, cm, badWheel("METADATA cannot be read (%v)", err)
	}
	if int64(len(data)) > lim.MaxMetadata {
		return nil, cm, badWheel("METADATA is larger than %d bytes", lim.MaxMetadata)
	}
	cm, err = ParseCoreMetadata(data)
	if err != nil {
		return nil, cm, err
	}
	return data, cm, nil
}

// checkDirectoryEnd reads the end-of-central-directory record before
// archive/zip does, so an archive that claims millions of entries or a
// huge directory is refused before anything is allocated for it. Zip64
// archives (only needed past 65535 entries or 4 GiB) are refused for the
// same reason.
func checkDirectoryEnd(ra io.ReaderAt, size int64, lim WheelLimits) error {
	if size < eocdLen {
		return badWheel("not a zip archive (too short)")
	}
	tail := min(size, eocdLen+65535) // the record plus the longest comment
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return badWheel("cannot read (%v)", err)
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return badWheel("not a zip archive (no end of central directory)")
	}
	rec := buf[i:]
	entries := binary.LittleEndian.Uint16(rec[10:12])
	dirSize := binary.LittleEndian.Uint32(rec[12:16])
	dirOffset := binary.LittleEndian.Uint32(rec[16:20])
	// archive/zip looks for zip64 records when any of these is all ones.
	if entries == 0xFFFF || dirSize == 0xFFFF || dirSize == 0xFFFFFFFF || dirOffset == 0xFFFFFFFF {
		return badWheel("zip64 archives are not accepted")
	}
	// A well-formed archive's directory ends where the end record starts.
	if int64(dirOffset)+int64(dirSize) != size-tail+int64(i) {
		return badWheel("central directory does not end at the end record")
	}
	if int(entries) > lim.MaxEntries {
		return badWheel("more than %d entries", lim.MaxEntries)
	}
	if int64(dirSize) > lim.MaxDirectory {
		return badWheel("central directory larger than %d bytes", lim.MaxDirectory)
	}
	return nil
}

// checkEntryName refuses names that would escape an installation
// directory. Nothing is extracted here, but pip will extract them, and a
// wheel that tries zip-slip is malformed whatever reads it.
func checkEntryName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") {
		return badWheel("unsafe entry name %q", trunc(name))
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || (len(seg) == 2 && seg[1] == ':') {
			return badWheel("unsafe entry name %q", trunc(name))
		}
	}
	return nil
}

// ParseCoreMetadata reads the header fields of a METADATA / PKG-INFO file
// (RFC 822 style, up to the first blank line; the body is the
// description). Metadata-Version, Name and Version are required.
func ParseCoreMetadata(data []byte) (CoreMetadata, error) {
	var cm CoreMetadata
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // continuation of a folded field
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return cm, badWheel("METADATA header line without a colon")
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "metadata-version":
			cm.MetadataVersion = v
		case "name":
			cm.Name = v
		case "version":
			cm.Version = v
		case "requires-python":
			cm.RequiresPython = v
		}
	}
	if err := sc.Err(); err != nil {
		return cm, badWheel("METADATA cannot be parsed (%v)", err)
	}
	if cm.MetadataVersion == "" || cm.Name == "" || cm.Version == "" {
		return cm, badWheel("METADATA lacks Metadata-Version, Name or Version")
	}
	if CheckName(cm.Name) != nil || CheckVersion(cm.Version) != nil || len(cm.RequiresPython) > maxRequiresPython {
		return cm, badWheel("METADATA has an invalid Name, Version or Requires-Python")
	}
	return cm, nil
}
