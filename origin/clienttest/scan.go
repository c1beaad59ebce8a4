package clienttest

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// LoadAdvisories loads the test advisory data of ecosystems (OSV's
// names) into e, as an administrator uploads a zip.
func LoadAdvisories(t *testing.T, e *origintest.Env, ecosystems ...string) {
	t.Helper()
	e.DoHeader("POST", "/api/v1/security/advisories?filename=osv.zip", e.Admin, vulntest.Zip(t, ecosystems...),
		map[string]string{"Content-Type": "application/zip"}).Want(200)
}

// ScanReport is GET /security/scans/:id.
type ScanReport struct {
	meta.Scan
	Report *scan.Report `json:"report"`
}

// ScanOf waits (up to a minute) for a completed scan of version of
// package pkg in repository repoID (scanned on upload) and returns it
// with its report.
func ScanOf(t *testing.T, e *origintest.Env, repoID, pkg, version string) ScanReport {
	t.Helper()
	var versions struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/"+url.PathEscape(pkg)+"/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&versions)
	id := ""
	for _, v := range versions.Versions {
		if v.Version == version {
			id = v.ArtifactID
		}
	}
	if id == "" {
		t.Fatalf("%s %s is not listed: %+v", pkg, version, versions)
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var list struct{ Scans []meta.Scan }
		e.Do("GET", "/api/v1/security/scans?status=completed&artifact_id="+id, e.Admin, nil).Want(200).JSON(&list)
		if len(list.Scans) > 0 {
			var r ScanReport
			e.Do("GET", "/api/v1/security/scans/"+list.Scans[0].ID, e.Admin, nil).Want(200).JSON(&r)
			return r
		}
		if time.Now().After(end) {
			t.Fatalf("%s %s: no completed scan within a minute", pkg, version)
		}
	}
}

// WantCase checks that the findings a report has for the package the
// advisory data's test case of ecosystem and name names are exactly the
// case's (at its affected version), with the case's severities.
func WantCase(t *testing.T, r ScanReport, ecosystem, name string) {
	t.Helper()
	c := caseOf(t, ecosystem, name)
	var got, want []string
	for _, f := range r.Report.Findings {
		if strings.EqualFold(f.Package, name) {
			got = append(got, f.ID+" "+f.Severity)
		}
	}
	for _, f := range c.Expected {
		sev := strings.ToLower(f.Severity)
		if sev == "moderate" {
			sev = "medium"
		}
		want = append(want, f.ID+" "+sev)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s %s %s: findings %v, want the test case's %v", ecosystem, name, c.Affected, got, want)
	}
}

// WantCaseScans checks the scans of package name of ecosystem, uploaded
// to repoID at the advisory data's test case's affected version and at
// its unaffected one: exactly the case's findings for the first, none for
// the second.
func WantCaseScans(t *testing.T, e *origintest.Env, repoID, ecosystem, name string) {
	t.Helper()
	c := caseOf(t, ecosystem, name)
	WantCase(t, ScanOf(t, e, repoID, name, c.Affected), ecosystem, name)
	if r := ScanOf(t, e, repoID, name, c.NotAffected); len(r.Report.Findings) != 0 {
		t.Errorf("%s %s, which the test case says is not affected: %+v", name, c.NotAffected, r.Report.Findings)
	}
}

// WantDependencyScan checks the scan of pkg at version, which pins dep at
// its test case's affected version: exactly that case's findings, every
// one of them the dependency's. It returns the scan.
func WantDependencyScan(t *testing.T, e *origintest.Env, repoID, pkg, version, ecosystem, dep string) ScanReport {
	t.Helper()
	r := ScanOf(t, e, repoID, pkg, version)
	WantCase(t, r, ecosystem, dep)
	for _, f := range r.Report.Findings {
		if !strings.EqualFold(f.Package, dep) || f.Source != "dependency" {
			t.Errorf("a finding of %s %s that is not of its dependency %s: %+v", pkg, version, dep, f)
		}
	}
	return r
}

func caseOf(t *testing.T, ecosystem, name string) vulntest.Case {
	t.Helper()
	for _, c := range vulntest.Cases(t) {
		if c.Ecosystem == ecosystem && c.Name == name {
			return c
		}
	}
	t.Fatalf("no test case for %s %s", ecosystem, name)
	return vulntest.Case{}
}
