package format

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
)

// Inspecting a stored file. What a package says of itself (name,
// version, licences, dependencies, files) is wanted outside the write
// routes: by scans, search, policies, importers and the UI. Each format
// reads it with the same parser its upload uses, from the file as the
// repository keeps it, and answers it in one shape, PackageInfo.

// Inspector is implemented by formats that can say what one of their
// stored files holds. It is pure: it reads s and nothing else (no
// metadata store, no HTTP), within the bounds of ReadTar, ReadZip and
// DecodeJSON/DecodeYAML/DecodeTOML, and refuses what an upload of the same
// file would refuse for its content. The PackageInfo it answers is
// Bounded.
//
// The input is the stored file, not an upload's request: what a client
// sends besides the file (npm's publish document, cargo's publish JSON,
// twine's form) is the protocol's, and the package says the same in the
// file (package.json, Cargo.toml, METADATA). A document that names other
// blobs is inspected with a way to open them (Stored.Blobs: an OCI
// manifest's config).
type Inspector interface {
	Inspect(ctx context.Context, s Stored) (PackageInfo, error)
}

// Stored is one file as a repository keeps it: every format works from
// a reader at random positions and a size (a blob, a spilled upload), so a
// zip is read from its directory and a tar streamed from its start.
type Stored struct {
	// Path is the artifact's path in its repository (a bare file name
	// does where it is enough). Formats that store several kinds of file
	// tell them apart by it (a wheel from an sdist, a POM from a jar, a
	// go.mod from a module zip, a .conda from a .tar.bz2), and take from
	// it what the file does not carry (a generic file's package and
	// version, an OCI tag).
	Path string
	File io.ReaderAt
	Size int64
	// Blobs opens the other blobs a stored document names, by the digest
	// it names them with (an OCI manifest's config); nil: they are not
	// read, and what they would tell is missing.
	Blobs blob.Opener
}

// PackageInfo is what a package says of itself, in one shape for every
// format, ready to be stored and served as JSON. Strings are valid UTF-8
// and every field is bounded (the Max* constants; Bounded cuts, and says
// so in Truncated), so a record of it stays small whatever was uploaded.
type PackageInfo struct {
	Format  string `json:"format"` // the repository format identifier
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Size    int64  `json:"size"` // bytes of the inspected file
	// Summary is the one-line description, Description the long one
	// where the format has both (else the one it has is the summary).
	Summary      string       `json:"summary,omitempty"`
	Description  string       `json:"description,omitempty"`
	Licenses     []string     `json:"licenses,omitempty"` // as the package writes them (SPDX expressions, names)
	Homepage     string       `json:"homepage,omitempty"`
	Repository   string       `json:"repository,omitempty"` // source repository URL
	Keywords     []string     `json:"keywords,omitempty"`
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// Files are the archive's regular files in archive order, the first
	// MaxInfoFiles of FileCount.
	Files     []FileEntry `json:"files,omitempty"`
	FileCount int         `json:"file_count,omitempty"`
	Image     *Image      `json:"image,omitempty"` // OCI manifests
	Truncated bool        `json:"truncated,omitempty"`
}

// Dependency is one dependency as the package declares it.
type Dependency struct {
	Name string `json:"name"`
	// Constraint is the version requirement in the format's own syntax,
	// verbatim ("^1.2.0", "[1.0,2.0)", ">= 2.1, < 3", "1.2.*").
	Constraint string `json:"constraint,omitempty"`
	// Kind says when it is needed: "runtime", "dev", "build", "test",
	// "peer", "optional", "indirect" (go), "constraint" (conda's
	// constrains), or Maven's scope as the POM writes it.
	Kind string `json:"kind"`
	// Optional is set for a dependency the package works without
	// (Maven's <optional>, cargo's optional = true).
	Optional bool `json:"optional,omitempty"`
	// Condition is when it applies, verbatim: a PEP 508 marker, a NuGet
	// target framework, a cargo target, a chart's condition.
	Condition string `json:"condition,omitempty"`
	// Ecosystem is the format identifier of the repositories the name
	// is found in; "platform" for Composer's php and ext-* requirements.
	Ecosystem string `json:"ecosystem"`
}

// FileEntry is a file of an archive.
type FileEntry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"` // where the package lists it (conda, a wheel's RECORD)
}

// Image is what an OCI manifest holds.
type Image struct {
	MediaType    string       `json:"media_type"`
	ArtifactType string       `json:"artifact_type,omitempty"`
	Config       *Descriptor  `json:"config,omitempty"`
	Layers       []Descriptor `json:"layers,omitempty"`
	Manifests    []Descriptor `json:"manifests,omitempty"` // an index's images, with their platforms
	Platform     *Platform    `json:"platform,omitempty"`  // from the config, when it was read
	Subject      string       `json:"subject,omitempty"`
}

// Descriptor is content an OCI manifest points at.
type Descriptor struct {
	MediaType string    `json:"media_type"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Platform  *Platform `json:"platform,omitempty"`
}

// Platform is what an image runs on.
type Platform struct {
	OS           string `json:"os,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	Variant      string `json:"variant,omitempty"`
	OSVersion    string `json:"os_version,omitempty"`
}

// Bounds of a PackageInfo: far above real packages' metadata (a few KiB).
// Each value is capped, and the whole as JSON (where escaping can make a
// byte six) at MaxInfoJSON: past it, lists are halved, files first.
const (
	MaxInfoJSON         = 1 << 20
	MaxInfoName         = 512 // name; a dependency's name
	MaxInfoVersion      = 256
	MaxInfoSummary      = 1 << 10
	MaxInfoDescription  = 16 << 10
	MaxInfoURL          = 2 << 10
	MaxInfoLicenses     = 16 // of MaxInfoShort bytes
	MaxInfoKeywords     = 64 // of MaxInfoShort bytes
	MaxInfoShort        = 256
	MaxInfoDependencies = 1000
	MaxInfoConstraint   = 512 // a constraint; a condition
	MaxInfoFiles        = 1000
	MaxInfoPath         = 1 << 10
	MaxInfoDescriptors  = 1000 // layers; an index's manifests
)

// Bounded is p cut to the bounds, with Truncated set when a list lost
// entries or a string was cut.
func (p PackageInfo) Bounded() PackageInfo {
	c := clipper{}
	p.Format = c.clip(p.Format, MaxInfoShort)
	p.Name = c.clip(p.Name, MaxInfoName)
	p.Version = c.clip(p.Version, MaxInfoVersion)
	p.Summary = c.clip(p.Summary, MaxInfoSummary)
	p.Description = c.clip(p.Description, MaxInfoDescription)
	p.Homepage = c.clip(p.Homepage, MaxInfoURL)
	p.Repository = c.clip(p.Repository, MaxInfoURL)
	p.Licenses = c.list(p.Licenses, MaxInfoLicenses, MaxInfoShort)
	p.Keywords = c.list(p.Keywords, MaxInfoKeywords, MaxInfoShort)
	p.Dependencies = cut(&c, slices.Clone(p.Dependencies), MaxInfoDependencies)
	for i := range p.Dependencies {
		d := &p.Dependencies[i]
		d.Name = c.clip(d.Name, MaxInfoName)
		d.Constraint = c.clip(d.Constraint, MaxInfoConstraint)
		d.Condition = c.clip(d.Condition, MaxInfoConstraint)
		d.Kind = c.clip(d.Kind, MaxInfoShort)
		d.Ecosystem = c.clip(d.Ecosystem, MaxInfoShort)
	}
	p.Files = cut(&c, slices.Clone(p.Files), MaxInfoFiles)
	for i := range p.Files {
		p.Files[i].Path = c.clip(p.Files[i].Path, MaxInfoPath)
		p.Files[i].SHA256 = c.clip(p.Files[i].SHA256, MaxInfoShort)
	}
	if p.FileCount < len(p.Files) {
		p.FileCount = len(p.Files)
	}
	if p.FileCount > len(p.Files) {
		c.cut = true
	}
	if im := p.Image; im != nil {
		b := *im
		b.MediaType = c.clip(b.MediaType, MaxInfoShort)
		b.ArtifactType = c.clip(b.ArtifactType, MaxInfoShort)
		b.Subject = c.clip(b.Subject, MaxInfoShort)
		b.Config = c.descriptor(b.Config)
		b.Platform = c.platform(b.Platform)
		b.Layers = c.descriptors(b.Layers)
		b.Manifests = c.descriptors(b.Manifests)
		p.Image = &b
	}
	p.Truncated = p.Truncated || c.cut
	return fit(p)
}

// fit halves p's longest lists (files, dependencies, layers and
// manifests), then drops its description, until its JSON is within
// MaxInfoJSON; what is left once those are gone is bounded far below.
func fit(p PackageInfo) PackageInfo {
	for {
		raw, err := json.Marshal(p)
		if err != nil || len(raw) <= MaxInfoJSON {
			return p
		}
		p.Truncated = true
		switch im := p.Image; {
		case len(p.Files) > 0:
			p.Files = p.Files[:len(p.Files)/2]
		case len(p.Dependencies) > 0:
			p.Dependencies = p.Dependencies[:len(p.Dependencies)/2]
		case im != nil && len(im.Layers)+len(im.Manifests) > 0:
			b := *im
			b.Layers, b.Manifests = b.Layers[:len(b.Layers)/2], b.Manifests[:len(b.Manifests)/2]
			p.Image = &b
		case p.Description != "":
			p.Description = ""
		default:
			return p
		}
	}
}

// CheckBounds reports the first field of p past its bound (fuzz tests
// check every inspector's answers with it).
func (p PackageInfo) CheckBounds() error {
	b := p.Bounded()
	b.Truncated = p.Truncated
	if !reflect.DeepEqual(b, p) {
		return fmt.Errorf("package info beyond its bounds or not valid UTF-8: %+v", p)
	}
	return nil
}

// clipper cuts strings and lists to their bounds and remembers whether
// it cut anything.
type clipper struct{ cut bool }

func (c *clipper) clip(s string, n int) string {
	v := strings.ToValidUTF8(s, "\uFFFD")
	out := Clip(v, n)
	if out != s {
		c.cut = c.cut || len(out) < len(v)
	}
	return out
}

func (c *clipper) list(l []string, n, each int) []string {
	l = cut(c, slices.Clone(l), n)
	for i := range l {
		l[i] = c.clip(l[i], each)
	}
	return l
}

func cut[T any](c *clipper, l []T, n int) []T {
	if len(l) > n {
		c.cut = true
		return l[:n:n]
	}
	return l
}

func (c *clipper) descriptor(d *Descriptor) *Descriptor {
	if d == nil {
		return nil
	}
	out := *d
	out.MediaType = c.clip(out.MediaType, MaxInfoShort)
	out.Digest = c.clip(out.Digest, MaxInfoShort)
	out.Platform = c.platform(out.Platform)
	return &out
}

func (c *clipper) descriptors(l []Descriptor) []Descriptor {
	l = cut(c, slices.Clone(l), MaxInfoDescriptors)
	for i := range l {
		l[i] = *c.descriptor(&l[i])
	}
	return l
}

func (c *clipper) platform(p *Platform) *Platform {
	if p == nil {
		return nil
	}
	out := Platform{OS: c.clip(p.OS, MaxInfoShort), Architecture: c.clip(p.Architecture, MaxInfoShort),
		Variant: c.clip(p.Variant, MaxInfoShort), OSVersion: c.clip(p.OSVersion, MaxInfoShort)}
	return &out
}

// FileList gathers an archive's files for PackageInfo as its members go
// by (ArchiveRules.Check): the first MaxInfoFiles regular files, and how
// many there are. A nil list gathers nothing: an upload that does not
// need the files passes nil.
type FileList struct {
	Files []FileEntry
	Count int
}

// Add counts e, and keeps it while there is room; directories and links
// are not files.
func (l *FileList) Add(e Entry) {
	if l == nil || e.Dir || !e.Regular {
		return
	}
	l.Count++
	if len(l.Files) < MaxInfoFiles {
		l.Files = append(l.Files, FileEntry{Path: Clip(strings.ToValidUTF8(e.Name, "\uFFFD"), MaxInfoPath), Size: e.Size})
	}
}

// Check is a Check for ArchiveRules that adds every member, then asks
// next (nil: nothing more to check).
func (l *FileList) Check(next func(Entry) error) func(Entry) error {
	return func(e Entry) error {
		l.Add(e)
		if next != nil {
			return next(e)
		}
		return nil
	}
}

// Fill sets p's files from l.
func (l *FileList) Fill(p *PackageInfo) {
	if l != nil {
		p.Files, p.FileCount = l.Files, l.Count
	}
}

// Str is v when it is a string, else "": decoded metadata is read
// field by field, and a field of another type is as good as absent.
func Str(v any) string {
	s, _ := v.(string)
	return s
}

// Strs are the strings of v, a list (other elements skipped) or one
// string.
func Strs(v any) []string {
	switch v := v.(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
