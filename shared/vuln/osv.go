// Package vuln is the advisory matcher: OSV records
// (https://ossf.github.io/osv-schema/), read within bounds, indexed by
// ecosystem and package name, and matched against a package version with
// that ecosystem's own version ordering, never by comparing strings. It
// knows nothing of repositories or scans: the scan service asks it which
// advisories affect a package at a version.
package vuln

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of one record: more than any real advisory needs.
const (
	MaxRecord     = 1 << 20 // bytes of one OSV JSON record
	MaxAffected   = 2000    // affected packages of a record
	MaxEvents     = 2000    // events of a range, versions of an affected package
	maxShort      = 512     // ids, names, versions, aliases
	maxSummary    = 1024
	maxDetails    = 16 << 10
	maxReferences = 64
	maxAliases    = 64
)

// Advisory is one OSV record, with what matching and reports use.
type Advisory struct {
	ID         string      `json:"id"`
	Modified   time.Time   `json:"modified"`
	Published  *time.Time  `json:"published,omitempty"`
	Withdrawn  *time.Time  `json:"withdrawn,omitempty"`
	Aliases    []string    `json:"aliases,omitempty"`
	Summary    string      `json:"summary,omitempty"`
	Details    string      `json:"details,omitempty"`
	Severity   []Score     `json:"severity,omitempty"`
	Affected   []Affected  `json:"affected"`
	References []Reference `json:"references,omitempty"`
	// DatabaseSpecific keeps only the database's severity label.
	DatabaseSpecific *struct {
		Severity string `json:"severity,omitempty"`
	} `json:"database_specific,omitempty"`
}

// Score is a severity score: a CVSS vector of its type.
type Score struct {
	Type  string `json:"type"` // CVSS_V2, CVSS_V3, CVSS_V4
	Score string `json:"score"`
}

// Affected is a package an advisory names, with its affected versions.
type Affected struct {
	Package  Package  `json:"package"`
	Ranges   []Range  `json:"ranges,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

// Package names a package in an ecosystem.
type Package struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Purl      string `json:"purl,omitempty"`
}

// Range is a version range, as events: introduced, fixed, last_affected.
type Range struct {
	Type   string  `json:"type"` // SEMVER, ECOSYSTEM (GIT ranges are not read)
	Events []Event `json:"events"`
}

// Event is one event of a range; exactly one field is set.
type Event struct {
	Introduced   string `json:"introduced,omitempty"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
	Limit        string `json:"limit,omitempty"`
}

// Reference is a link about the advisory.
type Reference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// ErrRecord is an OSV record that cannot be used.
var ErrRecord = errors.New("not a usable OSV record")

// Parse reads one OSV record: refused when larger than MaxRecord, when
// it is not JSON of the schema's shape, or without an id; long texts are
// cut, GIT ranges dropped. (Real records carry a zero modified time: it
// only decides which of two records of one id is kept.)
func Parse(raw []byte) (Advisory, error) {
	var a Advisory
	if len(raw) > MaxRecord {
		return a, fmt.Errorf("%w: larger than %d bytes", ErrRecord, MaxRecord)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	switch {
	case a.ID == "" || len(a.ID) > maxShort || !utf8.ValidString(a.ID) || strings.ContainsAny(a.ID, "/\\\x00"):
		return a, fmt.Errorf("%w: no id, or an id that is not a short plain string", ErrRecord)
	case len(a.Affected) > MaxAffected:
		return a, fmt.Errorf("%w: %s names more than %d packages", ErrRecord, a.ID, MaxAffected)
	}
	a.Summary = clip(a.Summary, maxSummary)
	a.Details = clip(a.Details, maxDetails)
	a.Aliases = clipList(a.Aliases, maxAliases)
	if len(a.References) > maxReferences {
		a.References = a.References[:maxReferences]
	}
	for i := range a.Affected {
		af := &a.Affected[i]
		if len(af.Versions) > MaxEvents {
			return a, fmt.Errorf("%w: %s lists more than %d versions of %s", ErrRecord, a.ID, MaxEvents, af.Package.Name)
		}
		kept := af.Ranges[:0]
		for _, r := range af.Ranges {
			if len(r.Events) > MaxEvents {
				return a, fmt.Errorf("%w: %s has a range of more than %d events", ErrRecord, a.ID, MaxEvents)
			}
			if r.Type == "SEMVER" || r.Type == "ECOSYSTEM" {
				kept = append(kept, r)
			}
		}
		af.Ranges = kept
	}
	return a, nil
}

// Label is the database's own severity label, upper case ("" none).
func (a *Advisory) Label() string {
	if a.DatabaseSpecific == nil {
		return ""
	}
	return strings.ToUpper(strings.TrimSpace(a.DatabaseSpecific.Severity))
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func clipList(l []string, n int) []string {
	if len(l) > n {
		l = l[:n]
	}
	for i := range l {
		l[i] = clip(l[i], maxShort)
	}
	return l
}
