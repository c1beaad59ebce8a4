// Package inventory finds what is installed in an image's file system,
// layer by layer, the way the packages' own tools record it: npm's
// node_modules/*/package.json and package-lock.json, Python's
// site-packages metadata (*.dist-info/METADATA, *.egg-info), the build
// information Go writes into every binary, the Maven metadata jars carry
// (META-INF/maven/**/pom.properties, one level of nested jars too), and
// the operating system's package databases (dpkg's status, apk's
// installed) with the release etc/os-release names. Layers apply in
// order, an upper layer's whiteouts hiding what lower ones installed.
//
// Everything is read from the layer as it streams by, within bounds per
// file; a file that cannot be read is a Problem of the image, not an
// error of the scan.
package inventory

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Kinds of what a package was read from.
const (
	NodeModules  = "node_modules"
	PackageLock  = "package-lock"
	SitePackages = "site-packages"
	GoBinary     = "go-binary"
	Jar          = "jar"
	Dpkg         = "dpkg"
	Apk          = "apk"
)

// OS is the ecosystem placeholder of an operating system's packages until
// the image's release is known (Packages fills it in).
const OS = "os"

// Package is a package installed in the image.
type Package struct {
	// Ecosystem is OSV's: npm, PyPI, Go, Maven; for an OS's packages
	// the release, as OSV names it ("Debian:12", "Alpine:v3.20"), or the
	// distribution's name alone when the release is unknown.
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	// Location is the file that says it is installed.
	Location string `json:"location"`
	Kind     string `json:"kind"`
}

// Problem is a file (or a layer) whose packages could not be read.
type Problem struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// Bounds of what is read of one file.
const (
	maxManifest  = 1 << 20  // package.json, METADATA, PKG-INFO, pom.properties, os-release
	maxLock      = 64 << 20 // package-lock.json
	maxDB        = 64 << 20 // dpkg's status, apk's installed
	maxJar       = 1 << 30  // a jar spooled to read its directory
	maxNested    = 64 << 20 // a jar inside a jar, read into memory
	maxProblems  = 200      // problems kept; the rest counted
	maxPackages  = 200000   // packages kept per image
	maxBuildMod  = 4 << 20  // a Go binary's module information
	layerEntries = 1 << 21  // members of a layer
)

// Image gathers the packages of an image's layers.
type Image struct {
	// TempDir is where jars are spooled ("": the system's).
	TempDir string

	pkgs     map[string][]Package // by location
	osID     string               // etc/os-release's ID and VERSION_ID
	osVer    string
	problems []Problem
	more     int // problems not kept
}

// New is an empty image.
func New() *Image { return &Image{pkgs: map[string][]Package{}} }

// layer is what one layer adds and removes.
type layer struct {
	im      *Image
	found   map[string][]Package
	hidden  []string // whiteouts: paths of lower layers removed
	opaque  []string // directories whose lower contents are removed
	osID    string
	osVer   string
	osRead  bool
	scratch scratch
}

// Layer applies the next layer, a tar stream of packed bytes compressed
// with c. An error (a layer that is not a readable tar, or beyond the
// bounds) leaves what earlier layers installed as it was.
func (im *Image) Layer(ctx context.Context, r io.Reader, packed int64, c format.Compression) error {
	l := &layer{im: im, found: map[string][]Package{}}
	rules := format.ArchiveRules{
		What:   "an image layer",
		Want:   func(string) bool { return true },
		All:    true,
		Layer:  true,
		Stream: l.file,
		Limits: format.ArchiveLimits{Unpacked: 1 << 40, Ratio: 1000, Entries: layerEntries},
	}
	if _, err := format.ReadTar(ctx, r, packed, c, rules); err != nil {
		return err
	}
	l.apply()
	return nil
}

// file reads one regular file of the layer as it streams by.
func (l *layer) file(ctx context.Context, name string, r io.Reader, size int64) ([]format.Member, error) {
	dir, base := path.Split(name)
	switch {
	case base == ".wh..wh..opq":
		l.opaque = append(l.opaque, strings.TrimSuffix(dir, "/"))
	case strings.HasPrefix(base, ".wh."):
		l.hidden = append(l.hidden, dir+strings.TrimPrefix(base, ".wh."))
	case base == "package.json" && nodeModule(dir):
		l.read(name, r, maxManifest, packageJSON)
	case base == "package-lock.json" && !strings.Contains(name, "node_modules/"):
		l.read(name, r, maxLock, packageLock)
	case pythonMeta(name):
		l.read(name, r, maxManifest, pythonMetadata)
	case name == "var/lib/dpkg/status" || strings.HasPrefix(name, "var/lib/dpkg/status.d/") && !strings.HasSuffix(base, ".md5sums"):
		l.read(name, r, maxDB, dpkgStatus)
	case name == "lib/apk/db/installed":
		l.read(name, r, maxDB, apkInstalled)
	case name == "etc/os-release" || name == "usr/lib/os-release" && !l.osRead:
		raw, err := readAll(r, maxManifest)
		if err == nil {
			l.osID, l.osVer = osRelease(raw)
			l.osRead = name == "etc/os-release"
		}
	case isJar(base):
		l.jar(ctx, name, r, size)
	default:
		pkgs, err := goBinary(r, &l.scratch)
		if err != nil {
			l.im.problem(name, err.Error())
		}
		l.add(name, pkgs)
	}
	return nil, ctx.Err()
}

// read reads a file within max bytes and parses it.
func (l *layer) read(name string, r io.Reader, max int64, parse func(name string, raw []byte) ([]Package, error)) {
	raw, err := readAll(r, max)
	if err == nil {
		var pkgs []Package
		if pkgs, err = parse(name, raw); err == nil {
			l.add(name, pkgs)
			return
		}
	}
	l.im.problem(name, err.Error())
}

func (l *layer) add(name string, pkgs []Package) {
	if len(pkgs) == 0 {
		return
	}
	for i := range pkgs {
		pkgs[i].Location = "/" + name
	}
	l.found[name] = pkgs
}

// apply removes what the layer's whiteouts hide from the layers below,
// then adds what it installs.
func (l *layer) apply() {
	im := l.im
	if len(l.hidden) > 0 || len(l.opaque) > 0 {
		gone := map[string]bool{}
		for _, h := range l.hidden {
			gone[h] = true
		}
		under := map[string]bool{}
		for _, o := range l.opaque {
			under[o] = true
		}
		for loc := range im.pkgs {
			if hiddenBy(loc, gone, under) {
				delete(im.pkgs, loc)
			}
		}
		if l.osID == "" && (gone["etc/os-release"] || gone["etc"] || gone["usr/lib/os-release"]) {
			im.osID, im.osVer = "", ""
		}
	}
	for loc, pkgs := range l.found {
		im.pkgs[loc] = pkgs
	}
	if l.osID != "" {
		im.osID, im.osVer = l.osID, l.osVer
	}
}

// hiddenBy reports whether loc, or a directory above it, is gone, or
// lies under an opaque directory.
func hiddenBy(loc string, gone, under map[string]bool) bool {
	if gone[loc] {
		return true
	}
	for d := path.Dir(loc); d != "." && d != "/"; d = path.Dir(d) {
		if gone[d] || under[d] {
			return true
		}
	}
	return under[""]
}

func (im *Image) problem(what, reason string) {
	if len(im.problems) >= maxProblems {
		im.more++
		return
	}
	im.problems = append(im.problems, Problem{What: "/" + strings.TrimPrefix(what, "/"), Reason: reason})
}

// Problem notes something of the image that was not read (a layer), and
// why.
func (im *Image) Problem(what, reason string) { im.problem(what, reason) }

// Problems are the files that could not be read, and why (with a last
// line counting those not kept).
func (im *Image) Problems() []Problem {
	out := slices.Clone(im.problems)
	if im.more > 0 {
		out = append(out, Problem{What: fmt.Sprintf("%d more files", im.more), Reason: "not listed"})
	}
	n := 0
	for _, pkgs := range im.pkgs {
		n += len(pkgs)
	}
	if n > maxPackages {
		out = append(out, Problem{What: fmt.Sprintf("%d packages", n-maxPackages), Reason: fmt.Sprintf("more than %d packages in one image", maxPackages)})
	}
	return out
}

// Packages are the packages installed in the image, by location, an OS's
// with their release's ecosystem.
func (im *Image) Packages() []Package {
	locs := make([]string, 0, len(im.pkgs))
	for loc := range im.pkgs {
		locs = append(locs, loc)
	}
	slices.Sort(locs)
	eco := osEcosystem(im.osID, im.osVer)
	var out []Package
	for _, loc := range locs {
		for _, p := range im.pkgs[loc] {
			if len(out) >= maxPackages {
				break // Problems counts the rest
			}
			if p.Ecosystem == OS {
				p.Ecosystem = eco
				if eco == "" {
					p.Ecosystem = map[string]string{Dpkg: "Debian", Apk: "Alpine"}[p.Kind]
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// readAll reads r whole, refusing more than max bytes.
func readAll(r io.Reader, max int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("larger than %d bytes: not read", max)
	}
	return raw, nil
}
