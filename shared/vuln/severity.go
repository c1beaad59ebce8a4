package vuln

import (
	"strings"

	cvss30 "github.com/pandatix/go-cvss/30"
	cvss31 "github.com/pandatix/go-cvss/31"
	cvss40 "github.com/pandatix/go-cvss/40"
)

// Severities, most severe first. Unknown is an advisory that says none
// (the Go database publishes none on purpose): counted apart, never
// dropped.
const (
	Critical = "critical"
	High     = "high"
	Medium   = "medium"
	Low      = "low"
	Unknown  = "unknown"
)

// SeverityLevel is the advisory's severity: the database's own label when it
// has one (CRITICAL, HIGH, MODERATE or MEDIUM, LOW), else the band of
// its CVSS v3 base score (>= 9 critical, >= 7 high, >= 4 medium, else
// low), else of its CVSS v4 score, else unknown.
func (a *Advisory) SeverityLevel() string {
	switch a.Label() {
	case "CRITICAL":
		return Critical
	case "HIGH":
		return High
	case "MODERATE", "MEDIUM":
		return Medium
	case "LOW":
		return Low
	}
	for _, want := range []string{"CVSS_V3", "CVSS_V4"} {
		for _, s := range a.Severity {
			if s.Type != want {
				continue
			}
			if score, ok := cvssScore(s.Score); ok {
				return band(score)
			}
		}
	}
	return Unknown
}

func band(score float64) string {
	switch {
	case score >= 9:
		return Critical
	case score >= 7:
		return High
	case score >= 4:
		return Medium
	}
	return Low
}

// cvssScore is the base score of a CVSS 3.0, 3.1 or 4.0 vector.
func cvssScore(vector string) (float64, bool) {
	switch {
	case strings.HasPrefix(vector, "CVSS:3.1/"):
		if v, err := cvss31.ParseVector(vector); err == nil {
			return v.BaseScore(), true
		}
	case strings.HasPrefix(vector, "CVSS:3.0/"):
		if v, err := cvss30.ParseVector(vector); err == nil {
			return v.BaseScore(), true
		}
	case strings.HasPrefix(vector, "CVSS:4.0/"):
		if v, err := cvss40.ParseVector(vector); err == nil {
			return v.Score(), true
		}
	}
	return 0, false
}
