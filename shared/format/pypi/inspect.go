package pypi

import (
	"context"
	"io"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored distribution, told by its file name: a wheel
// with the reader its upload uses (readWheel), an sdist (.tar.gz or .zip)
// by its top directory's PKG-INFO, both through the one core metadata
// parser (parseMetadata). It answers Name, Version, Summary, the
// description, the licence (License-Expression, else License, else the
// licence classifiers), Home-page and the project URLs, Keywords, every
// Requires-Dist (the requirement verbatim, its marker as the condition,
// "optional" when the marker names an extra) and the archive's files
// (for a wheel, with the sha256 its RECORD gives each).
// Twine's upload of an sdist stores it without reading it: an sdist the
// inspector cannot read may be stored.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	name := path.Base(s.Path)
	d, err := ParseFilename(name)
	if err != nil {
		return format.PackageInfo{}, err
	}
	files := &format.FileList{}
	var cm CoreMetadata
	var md Metadata
	if d.Kind == KindWheel {
		_, cm, md, err = readWheel(ctx, s.File, s.Size, d, DefaultWheelLimits, files)
	} else {
		cm, md, err = readSdist(ctx, s.File, s.Size, strings.HasSuffix(name, ".zip"), files)
	}
	if err != nil {
		return format.PackageInfo{}, err
	}
	info := metadataInfo(cm, md)
	info.Size = s.Size
	files.Fill(&info)
	return info.Bounded(), nil
}

func badSdist(msg string, args ...any) error {
	return format.BadRequest("invalid sdist: "+msg, args...)
}

// readSdist reads an sdist: a gzip'd tar (or a zip) of one top
// directory, whose PKG-INFO is the core metadata.
func readSdist(ctx context.Context, ra io.ReaderAt, size int64, isZip bool, files *format.FileList) (CoreMetadata, Metadata, error) {
	rules := format.ArchiveRules{What: "an sdist", All: true, Check: files.Check(nil),
		Limits: format.ArchiveLimits{Member: DefaultWheelLimits.MaxMetadata},
		Want:   func(name string) bool { return strings.Count(name, "/") == 1 && path.Base(name) == "PKG-INFO" }}
	var ms []format.Member
	var err error
	if isZip {
		ms, err = format.ReadZip(ctx, ra, size, rules)
	} else {
		ms, err = format.ReadTar(ctx, io.NewSectionReader(ra, 0, size), size, format.Gzip, rules)
	}
	switch {
	case err != nil:
		return CoreMetadata{}, Metadata{}, err
	case len(ms) != 1:
		return CoreMetadata{}, Metadata{}, badSdist("not one <name>-<version>/PKG-INFO")
	}
	return parseMetadata(ms[0].Data, badSdist)
}

// metadataInfo is what core metadata says of its distribution.
func metadataInfo(cm CoreMetadata, md Metadata) format.PackageInfo {
	info := format.PackageInfo{Format: Name, Name: cm.Name, Version: cm.Version, Summary: md.Summary, Description: md.Description,
		Homepage: md.HomePage, Keywords: md.Keywords}
	if md.License != "" {
		info.Licenses = []string{md.License}
	} else {
		// "License :: OSI Approved :: MIT License" says "MIT License".
		for _, c := range md.Classifiers {
			if parts := strings.Split(c, " :: "); len(parts) > 1 && parts[0] == "License" && parts[len(parts)-1] != "OSI Approved" {
				info.Licenses = append(info.Licenses, parts[len(parts)-1])
			}
		}
	}
	for _, u := range md.ProjectURLs {
		// Labels are compared as PyPI does: lowercase, without punctuation
		// or blanks ("Source Code" is "sourcecode").
		label := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, strings.ToLower(u[0]))
		switch label {
		case "homepage", "home":
			if info.Homepage == "" {
				info.Homepage = u[1]
			}
		case "source", "sourcecode", "repository", "code", "github", "gitlab":
			if info.Repository == "" {
				info.Repository = u[1]
			}
		}
	}
	for _, r := range md.RequiresDist {
		info.Dependencies = append(info.Dependencies, requirement(r))
	}
	return info
}

// requirement splits a PEP 508 requirement: the name, then the rest
// verbatim (extras, version specifiers or a URL), the marker as its
// condition.
func requirement(spec string) format.Dependency {
	req, marker, _ := strings.Cut(spec, ";")
	req, marker = strings.TrimSpace(req), strings.TrimSpace(marker)
	i := strings.IndexFunc(req, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	})
	if i < 0 {
		i = len(req)
	}
	d := format.Dependency{Name: req[:i], Constraint: strings.TrimSpace(req[i:]), Kind: "runtime", Condition: marker, Ecosystem: Name}
	if strings.Contains(marker, "extra") {
		d.Kind = "optional"
	}
	return d
}
