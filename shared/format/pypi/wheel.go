package pypi

import (
	"bufio"
	"bytes"
	"context"
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
// a well-formed, non-zip64 zip within lim (format.ReadZip), with safe
// entry names and exactly one "<name>-<version>.dist-info/METADATA" for
// d's project.
func WheelMetadata(ctx context.Context, ra io.ReaderAt, size int64, d Dist, lim WheelLimits) ([]byte, CoreMetadata, error) {
	var cm CoreMetadata
	ms, err := format.ReadZip(ctx, ra, size, format.ArchiveRules{What: "a wheel", All: true,
		Limits: format.ArchiveLimits{Entries: lim.MaxEntries, Directory: lim.MaxDirectory, Member: lim.MaxMetadata},
		Want: func(name string) bool {
			dir, file, ok := strings.Cut(name, "/")
			stem, dist := strings.CutSuffix(dir, ".dist-info")
			n, v, named := strings.Cut(stem, "-")
			return ok && file == "METADATA" && dist && named && Normalize(n) == Normalize(d.Name) && sameVersion(v, d.Version)
		}})
	switch {
	case err != nil:
		return nil, cm, err
	case len(ms) == 0:
		return nil, cm, badWheel("no %s-%s.dist-info/METADATA", d.Name, d.Version)
	case len(ms) > 1:
		return nil, cm, badWheel("more than one .dist-info/METADATA")
	}
	data := ms[0].Data
	cm, err = ParseCoreMetadata(data)
	if err != nil {
		return nil, cm, err
	}
	return data, cm, nil
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
