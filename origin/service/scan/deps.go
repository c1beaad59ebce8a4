package scan

import (
	"regexp"
	"strings"

	"github.com/depot-registry/depot/shared/vuln"
)

// What a declared dependency says of the version installed, per
// ecosystem: exact where the client installs the version written (or,
// NuGet, the lowest one allowed, which is what it restores); otherwise a
// range, whose installed version depends on the client's resolution and
// is reported as not scanned.
//
//	Go        every require names one version (minimal version selection)
//	npm       "1.2.3" exact; ^, ~, ranges, tags, URLs: a range
//	PyPI      "==1.2.3" or "===1.2.3" exact (in parentheses too); anything else a range
//	crates    "=1.2.3" exact; "1.2.3" means ^1.2.3: a range
//	Maven     "1.2.3" (the version Maven picks unless another wins) and "[1.2.3]" exact; ranges and ${properties} not
//	NuGet     "1.2.3" (a minimum: NuGet restores the lowest allowed) and "[1.2.3]" exact; other ranges not
//	RubyGems  "= 1.2.3" exact; ~>, >= and the rest a range
//	Composer  "1.2.3" or "v1.2.3" exact; ^, ~, *, ranges a range
var (
	plainVersion = regexp.MustCompile(`^v?[0-9][0-9A-Za-z.+_-]*$`)
	mavenExact   = regexp.MustCompile(`^\[([^,\[\]()]+)\]$`)
)

// exactVersion is the version a dependency's constraint pins, if it pins
// one.
func exactVersion(ecosystem, constraint string) (string, bool) {
	c := strings.TrimSpace(constraint)
	if c == "" {
		return "", false
	}
	switch ecosystem {
	case vuln.Go:
		return c, plainVersion.MatchString(c)
	case vuln.NPM:
		return c, plainVersion.MatchString(c) && !strings.HasPrefix(c, "v")
	case vuln.PyPI:
		c = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(c, "("), ")")) // older METADATA: "(==1.0)"
		for _, op := range []string{"===", "=="} {
			if v, ok := strings.CutPrefix(c, op); ok {
				v = strings.TrimSpace(v)
				return v, plainVersion.MatchString(v) && !strings.Contains(v, "*")
			}
		}
	case vuln.Crates:
		if v, ok := strings.CutPrefix(c, "="); ok {
			v = strings.TrimSpace(v)
			return v, plainVersion.MatchString(v)
		}
	case vuln.Maven, vuln.NuGet:
		if m := mavenExact.FindStringSubmatch(c); m != nil {
			return strings.TrimSpace(m[1]), true
		}
		return c, plainVersion.MatchString(c)
	case vuln.RubyGems:
		if v, ok := strings.CutPrefix(c, "="); ok && !strings.HasPrefix(v, "=") {
			v = strings.TrimSpace(v)
			return v, plainVersion.MatchString(v)
		}
	case vuln.Packagist:
		return strings.TrimPrefix(c, "v"), plainVersion.MatchString(c)
	}
	return "", false
}
