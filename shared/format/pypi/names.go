package pypi

import (
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Bounds on names. PyPI has no hard limit on project names; these keep a
// file name (name + version + tags) under the 255-byte segment limit.
const (
	maxNameLen    = 128
	maxVersionLen = 64
)

// Normalize is the PEP 503 normalized form of a project name: lowercase,
// every run of "-", "_" and "." replaced by a single "-". Uploads and
// lookups both go through it, so "Demo_Pkg" and "demo.pkg" are one project.
func Normalize(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	sep := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '-' || c == '_' || c == '.' {
			sep = true
			continue
		}
		if sep {
			b.WriteByte('-')
			sep = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	if sep {
		b.WriteByte('-')
	}
	return b.String()
}

// CheckName validates a project name against PEP 508: ASCII letters and
// digits, with ".", "_" and "-" inside.
func CheckName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return format.BadRequest("invalid project name %q: 1 to %d characters", trunc(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isAlnum(c) {
			continue
		}
		if (c == '.' || c == '_' || c == '-') && i > 0 && i < len(name)-1 {
			continue
		}
		return format.BadRequest("invalid project name %q: letters, digits and inner '.', '_', '-' only", trunc(name))
	}
	return nil
}

// CheckVersion accepts the characters of a PEP 440 version (and of the
// legacy versions older tools write), bounded, starting with a letter or
// digit. Full PEP 440 parsing is not needed: the version is only matched
// against the file name and used as a path segment.
func CheckVersion(v string) error {
	if v == "" || len(v) > maxVersionLen || !isAlnum(v[0]) {
		return format.BadRequest("invalid version %q", trunc(v))
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isAlnum(c) && !strings.ContainsRune(".!+_-", rune(c)) {
			return format.BadRequest("invalid version %q", trunc(v))
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Kinds of distribution file.
const (
	KindSdist = "sdist"
	KindWheel = "bdist_wheel"
)

// Dist is what a distribution file name says.
type Dist struct {
	Kind    string // KindSdist or KindWheel
	Name    string // the distribution part, as written
	Version string
	// Wheel tags (empty for sdists).
	Build, Python, ABI, Platform string
}

// ParseFilename parses an sdist ("<name>-<version>.tar.gz" or ".zip") or a
// wheel file name (PEP 427: "<name>-<version>[-<build>]-<py>-<abi>-<plat>.whl").
// An sdist name is split at its last "-"; CheckFilename is the stricter
// test that uses the declared name and version.
func ParseFilename(filename string) (Dist, error) {
	if err := format.CheckSegment("filename", filename); err != nil {
		return Dist{}, err
	}
	if stem, ok := strings.CutSuffix(filename, ".whl"); ok {
		return parseWheelName(filename, stem)
	}
	stem, ok := strings.CutSuffix(filename, ".tar.gz")
	if !ok {
		stem, ok = strings.CutSuffix(filename, ".zip")
	}
	if !ok {
		return Dist{}, format.BadRequest("invalid distribution file name %q: must end in .whl, .tar.gz or .zip", filename)
	}
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 {
		return Dist{}, format.BadRequest("invalid sdist file name %q: want <name>-<version>", filename)
	}
	d := Dist{Kind: KindSdist, Name: stem[:i], Version: stem[i+1:]}
	if CheckName(d.Name) != nil || CheckVersion(d.Version) != nil {
		return Dist{}, format.BadRequest("invalid sdist file name %q: want <name>-<version>", filename)
	}
	return d, nil
}

func parseWheelName(filename, stem string) (Dist, error) {
	bad := format.BadRequest("invalid wheel file name %q: want <name>-<version>[-<build>]-<python>-<abi>-<platform>.whl", filename)
	parts := strings.Split(stem, "-")
	d := Dist{Kind: KindWheel}
	switch len(parts) {
	case 5:
		d.Name, d.Version, d.Python, d.ABI, d.Platform = parts[0], parts[1], parts[2], parts[3], parts[4]
	case 6:
		d.Name, d.Version, d.Build, d.Python, d.ABI, d.Platform = parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]
		// PEP 427: the build tag starts with a digit.
		if d.Build == "" || d.Build[0] < '0' || d.Build[0] > '9' || !tagChars(d.Build) {
			return Dist{}, bad
		}
	default:
		return Dist{}, bad
	}
	if CheckName(d.Name) != nil || CheckVersion(d.Version) != nil {
		return Dist{}, bad
	}
	for _, t := range []string{d.Python, d.ABI, d.Platform} {
		if t == "" || !tagChars(t) {
			return Dist{}, bad
		}
	}
	return d, nil
}

// tagChars reports whether a wheel tag holds only letters, digits, "."
// (compressed tag sets) and "_".
func tagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '.' && s[i] != '_' {
			return false
		}
	}
	return true
}

// CheckFilename parses filename and checks that it belongs to project
// name at version: the name part normalizes to the same project and the
// version matches (wheels escape "-" in versions as "_").
func CheckFilename(name, version, filename string) (Dist, error) {
	d, err := ParseFilename(filename)
	if err != nil {
		return d, err
	}
	if d.Kind == KindSdist {
		// The split at the last "-" is ambiguous for legacy versions that
		// contain "-": cut the declared version off instead.
		stem := strings.TrimSuffix(strings.TrimSuffix(filename, ".tar.gz"), ".zip")
		for _, v := range []string{version, strings.ReplaceAll(version, "-", "_")} {
			if len(stem) > len(v)+1 && strings.EqualFold(stem[len(stem)-len(v):], v) && stem[len(stem)-len(v)-1] == '-' {
				d.Name, d.Version = stem[:len(stem)-len(v)-1], stem[len(stem)-len(v):]
				break
			}
		}
	}
	if Normalize(d.Name) != Normalize(name) {
		return d, format.BadRequest("file name %q does not belong to project %q", filename, name)
	}
	if !sameVersion(d.Version, version) {
		return d, format.BadRequest("file name %q does not match version %q", filename, version)
	}
	return d, nil
}

// sameVersion compares a version as written in a file name with the
// declared one, case-insensitively and with "_" standing for "-".
func sameVersion(inName, declared string) bool {
	return strings.EqualFold(strings.ReplaceAll(inName, "_", "-"), strings.ReplaceAll(declared, "_", "-"))
}
