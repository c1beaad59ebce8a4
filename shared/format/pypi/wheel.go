package pypi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
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
	data, cm, _, err := readWheel(ctx, ra, size, d, lim, nil)
	return data, cm, err
}

// readWheel is the one reading of a wheel, for uploads (WheelMetadata)
// and inspections: also the rest of METADATA and, when files is given,
// the zip's files with the sha256 RECORD gives each.
func readWheel(ctx context.Context, ra io.ReaderAt, size int64, d Dist, lim WheelLimits, files *format.FileList) ([]byte, CoreMetadata, Metadata, error) {
	var cm CoreMetadata
	ours := func(name, want string) bool {
		dir, file, ok := strings.Cut(name, "/")
		stem, dist := strings.CutSuffix(dir, ".dist-info")
		n, v, named := strings.Cut(stem, "-")
		return ok && file == want && dist && named && Normalize(n) == Normalize(d.Name) && sameVersion(v, d.Version)
	}
	ms, err := format.ReadZip(ctx, ra, size, format.ArchiveRules{What: "a wheel", All: true,
		Limits: format.ArchiveLimits{Entries: lim.MaxEntries, Directory: lim.MaxDirectory, Member: lim.MaxMetadata},
		Check:  files.Check(nil),
		Want:   func(name string) bool { return ours(name, "METADATA") || files != nil && ours(name, "RECORD") }})
	var metadata [][]byte
	var record []byte
	for _, m := range ms {
		if ours(m.Name, "RECORD") {
			record = m.Data
		} else {
			metadata = append(metadata, m.Data)
		}
	}
	switch {
	case err != nil:
		return nil, cm, Metadata{}, err
	case len(metadata) == 0:
		return nil, cm, Metadata{}, badWheel("no %s-%s.dist-info/METADATA", d.Name, d.Version)
	case len(metadata) > 1:
		return nil, cm, Metadata{}, badWheel("more than one .dist-info/METADATA")
	}
	data := metadata[0]
	cm, md, err := parseMetadata(data, badWheel)
	if err != nil {
		return nil, cm, md, err
	}
	if files != nil && record != nil {
		sums := recordSums(record)
		for i := range files.Files {
			files.Files[i].SHA256 = sums[files.Files[i].Path]
		}
	}
	return data, cm, md, nil
}

// recordSums reads a wheel's RECORD (CSV: path, "sha256=" and the digest
// in unpadded URL-safe base64, size) into hex sha256 digests by path;
// lines it cannot read are skipped, as the files are listed without them.
func recordSums(record []byte) map[string]string {
	r := csv.NewReader(bytes.NewReader(record))
	r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
	sums := map[string]string{}
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return sums
		}
		if err != nil {
			if _, ok := err.(*csv.ParseError); ok {
				continue
			}
			return sums
		}
		if len(row) < 2 {
			continue
		}
		if b64, ok := strings.CutPrefix(row[1], "sha256="); ok {
			if sum, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(b64, "=")); err == nil && len(sum) == 32 {
				sums[row[0]] = hex.EncodeToString(sum)
			}
		}
	}
}

// ParseCoreMetadata reads the header fields of a METADATA / PKG-INFO file
// (RFC 822 style, up to the first blank line; the body is the
// description). Metadata-Version, Name and Version are required.
func ParseCoreMetadata(data []byte) (CoreMetadata, error) {
	cm, _, err := parseMetadata(data, badWheel)
	return cm, err
}

// Metadata is the rest of a METADATA / PKG-INFO file, which the index
// does not need and the inspector answers.
type Metadata struct {
	Summary, Description string
	License              string // License-Expression, else License
	Classifiers          []string
	HomePage             string
	ProjectURLs          [][2]string // label, URL
	Keywords             []string
	RequiresDist         []string // PEP 508, verbatim
}

// parseMetadata is the one parser of core metadata; bad words its errors
// (a wheel's METADATA, an sdist's PKG-INFO). A folded field goes on over
// the lines that start with a blank: kept for the fields read whole
// (License, Description), skipped for the others, as the index always
// has.
func parseMetadata(data []byte, bad func(string, ...any) error) (CoreMetadata, Metadata, error) {
	var cm CoreMetadata
	var md Metadata
	var expression string
	var folded *string // the field continuation lines add to
	offset := 0
	for raw := range strings.Lines(string(data)) {
		offset += len(raw)
		line := strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		if strings.TrimSpace(line) == "" {
			md.Description = strings.TrimSpace(string(data[offset:])) // the body (Metadata 2.1)
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if folded != nil {
				*folded += "\n" + strings.TrimPrefix(strings.TrimSpace(line), "|")
			}
			continue // continuation of a folded field
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return cm, md, bad("METADATA header line without a colon")
		}
		v = strings.TrimSpace(v)
		folded = nil
		switch strings.ToLower(k) {
		case "metadata-version":
			cm.MetadataVersion = v
		case "name":
			cm.Name = v
		case "version":
			cm.Version = v
		case "requires-python":
			cm.RequiresPython = v
		case "summary":
			md.Summary = v
		case "description":
			md.Description = v
			folded = &md.Description
		case "license":
			md.License = v
			folded = &md.License
		case "license-expression":
			expression = v
		case "classifier":
			md.Classifiers = append(md.Classifiers, v)
		case "home-page":
			md.HomePage = v
		case "project-url":
			label, url, _ := strings.Cut(v, ",")
			md.ProjectURLs = append(md.ProjectURLs, [2]string{strings.TrimSpace(label), strings.TrimSpace(url)})
		case "keywords":
			md.Keywords = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		case "requires-dist":
			md.RequiresDist = append(md.RequiresDist, v)
		}
	}
	if cm.MetadataVersion == "" || cm.Name == "" || cm.Version == "" {
		return cm, md, bad("METADATA lacks Metadata-Version, Name or Version")
	}
	if CheckName(cm.Name) != nil || CheckVersion(cm.Version) != nil || len(cm.RequiresPython) > maxRequiresPython {
		return cm, md, bad("METADATA has an invalid Name, Version or Requires-Python")
	}
	if expression != "" {
		md.License = expression
	}
	return cm, md, nil
}
