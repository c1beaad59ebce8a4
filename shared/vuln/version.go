package vuln

import (
	"regexp"
	"strings"

	"github.com/google/osv-scalibr/semantic"
)

// OSV ecosystem names of the registry's formats.
const (
	Go        = "Go"
	NPM       = "npm"
	PyPI      = "PyPI"
	Crates    = "crates.io"
	Maven     = "Maven"
	NuGet     = "NuGet"
	RubyGems  = "RubyGems"
	Packagist = "Packagist"
)

// ecosystems maps a repository format to the OSV ecosystem of its
// packages.
var ecosystems = map[string]string{
	"go": Go, "npm": NPM, "pypi": PyPI, "crates": Crates, "maven": Maven, "gradle": Maven,
	"nuget": NuGet, "rubygems": RubyGems, "composer": Packagist,
}

// Ecosystem is the OSV ecosystem of a repository format's packages, ""
// for a format no advisory data covers (docker, helm, conda, generic).
func Ecosystem(format string) string { return ecosystems[format] }

var pep503 = regexp.MustCompile(`[-_.]+`)

// NormalName is a package name as the ecosystem compares names: PyPI
// names PEP 503-normalised, NuGet ids and Packagist names lower case, Go
// module paths with the proxy's "!x" escapes decoded.
func NormalName(ecosystem, name string) string {
	switch ecosystem {
	case PyPI:
		return strings.ToLower(pep503.ReplaceAllString(name, "-"))
	case NuGet, Packagist:
		return strings.ToLower(name)
	case Go:
		if strings.Contains(name, "!") {
			var b strings.Builder
			for i := 0; i < len(name); i++ {
				if name[i] == '!' && i+1 < len(name) {
					i++
					b.WriteString(strings.ToUpper(name[i : i+1]))
					continue
				}
				b.WriteByte(name[i])
			}
			return b.String()
		}
	}
	return name
}

// version is a version parsed in its ecosystem's ordering.
type version struct {
	v semantic.Version
}

// parseVersion parses v in ecosystem's ordering (Go's leading "v" is
// optional; a Composer "v" is stripped).
func parseVersion(ecosystem, v string) (version, error) {
	switch ecosystem {
	case Packagist:
		v = strings.TrimPrefix(strings.TrimPrefix(v, "v"), "V")
	}
	sv, err := semantic.Parse(v, ecosystem)
	return version{sv}, err
}
