package npm

import (
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// MaxNameLength is npm's limit on a package name (validate-npm-package-name).
const MaxNameLength = 214

// Name is a parsed package name: "@scope/pkg" has Scope "scope" and Base
// "pkg"; an unscoped name has no Scope.
type Name struct {
	Scope, Base string
}

// String is the full name, "@scope/base" or "base".
func (n Name) String() string {
	if n.Scope == "" {
		return n.Base
	}
	return "@" + n.Scope + "/" + n.Base
}

// File is the tarball file name of version: npm leaves the scope out.
func (n Name) File(version string) string { return n.Base + "-" + version + ".tgz" }

// Path is the artifact path of the tarball of version, npm's own tarball
// path below the registry URL.
func (n Name) Path(version string) string { return n.String() + "/-/" + n.File(version) }

// ParseName validates a package name with the rules npm applies to new
// packages: lower case, URL-safe, at most 214 bytes, no leading dot or
// underscore, one optional "@scope/" part. Legacy upper-case names are
// refused: nothing here predates the rule.
func ParseName(s string) (Name, error) {
	if s == "" || len(s) > MaxNameLength {
		return Name{}, format.BadRequest("package name must be 1 to %d characters", MaxNameLength)
	}
	var n Name
	if strings.HasPrefix(s, "@") {
		scope, base, ok := strings.Cut(s[1:], "/")
		if !ok {
			return Name{}, format.BadRequest("scoped package name %q must be @scope/name", s)
		}
		n = Name{Scope: scope, Base: base}
		if !namePart(scope) {
			return Name{}, format.BadRequest("invalid package scope in %q", s)
		}
	} else {
		n = Name{Base: s}
	}
	if !namePart(n.Base) {
		return Name{}, format.BadRequest("invalid package name %q: use lower-case letters, digits, '-', '.' and '_', not starting with '.' or '_'", s)
	}
	if n.Scope == "" && (n.Base == "node_modules" || n.Base == "favicon.ico") {
		return Name{}, format.BadRequest("package name %q is not allowed", s)
	}
	return n, nil
}

// namePart reports whether s is a valid scope or base name.
func namePart(s string) bool {
	if s == "" || s[0] == '.' || s[0] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// MaxVersionLength bounds a version string (npm's semver uses 256).
const MaxVersionLength = 256

// Version is a parsed semantic version (semver 2.0, as npm's semver
// parses it in strict mode).
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // prerelease identifiers
	Build               string
}

// ParseVersion parses a strict semver version: no "v", no leading zeros
// in numeric parts, prerelease and build identifiers of [0-9A-Za-z-].
func ParseVersion(s string) (Version, bool) {
	if s == "" || len(s) > MaxVersionLength {
		return Version{}, false
	}
	var v Version
	core, build, hasBuild := strings.Cut(s, "+")
	if hasBuild {
		if !identifiers(build, false) {
			return Version{}, false
		}
		v.Build = build
	}
	core, pre, hasPre := strings.Cut(core, "-")
	if hasPre {
		if !identifiers(pre, true) {
			return Version{}, false
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if !numeric(p) {
			return Version{}, false
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return Version{}, false
		}
		*nums[i] = n
	}
	return v, true
}

// numeric is a number without leading zeros.
func numeric(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// identifiers checks dot-separated identifiers; prerelease numbers must
// not have leading zeros.
func identifiers(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		allDigits := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				allDigits = false
			default:
				return false
			}
		}
		if pre && allDigits && !numeric(id) {
			return false
		}
	}
	return true
}

// Compare orders versions by semver precedence (build metadata ignored).
func Compare(a, b Version) int {
	for _, d := range [][2]uint64{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.Pre) == 0 && len(b.Pre) == 0:
		return 0
	case len(a.Pre) == 0:
		return 1
	case len(b.Pre) == 0:
		return -1
	}
	for i := 0; i < len(a.Pre) && i < len(b.Pre); i++ {
		if c := compareIdent(a.Pre[i], b.Pre[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a.Pre), len(b.Pre))
}

func compareIdent(a, b string) int {
	an, bn := numeric(a), numeric(b)
	switch {
	case an && bn:
		if c := cmpInt(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MaxTagLength bounds a dist-tag name.
const MaxTagLength = 128

// CheckTag validates a dist-tag name: a URL-safe word that is not itself
// a version, or "npm install pkg@1.0.0" would be ambiguous.
func CheckTag(tag string) error {
	if tag == "" || len(tag) > MaxTagLength || tag == "." || tag == ".." {
		return format.BadRequest("dist-tag must be 1 to %d characters, not a dot path", MaxTagLength)
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return format.BadRequest("dist-tag %q may only hold letters, digits, '-', '.', '_' and '~'", tag)
		}
	}
	if _, ok := ParseVersion(strings.TrimPrefix(tag, "v")); ok {
		return format.BadRequest("dist-tag %q must not be a valid semver version", tag)
	}
	return nil
}
