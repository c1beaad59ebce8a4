package vuln_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/vuln"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// TestCases: every test case of the real advisory data yields exactly
// the findings it names, with their severities, for the affected
// version, and none for the version that is not affected; names are
// matched as their ecosystem compares them (Werkzeug, @babel/traverse).
func TestCases(t *testing.T) {
	db := vuln.Build(vulntest.Advisories(t))
	if db.Len() < 10000 {
		t.Fatalf("%d advisories read", db.Len())
	}
	cases := vulntest.Cases(t)
	if len(cases) != 80 {
		t.Fatalf("%d test cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Ecosystem+"/"+c.Name+"@"+c.Affected, func(t *testing.T) {
			got, err := db.Match(c.Ecosystem, c.Name, c.Affected)
			if err != nil {
				t.Fatal(err)
			}
			var have, want []string
			for _, f := range got {
				have = append(have, f.ID+" "+f.Severity)
			}
			for _, f := range c.Expected {
				// The data's labels: MODERATE is medium.
				want = append(want, f.ID+" "+strings.ReplaceAll(strings.ToLower(f.Severity), "moderate", vuln.Medium))
			}
			slices.Sort(have)
			slices.Sort(want)
			if !slices.Equal(have, want) {
				t.Errorf("findings %v, want %v", have, want)
			}
			if none, err := db.Match(c.Ecosystem, c.Name, c.NotAffected); err != nil || len(none) != 0 {
				t.Errorf("%s: %v %v", c.NotAffected, none, err)
			}
		})
	}
}

// TestEvaluation: the OSV evaluation's corners, on records made here:
// introduced "0", last_affected inclusive, an explicit versions list,
// several ranges, withdrawn records, Maven's qualifiers.
func TestEvaluation(t *testing.T) {
	now := time.Now()
	withdrawn := now
	db := vuln.Build([]vuln.Advisory{
		{ID: "A-1", Modified: now, Affected: []vuln.Affected{{Package: vuln.Package{Ecosystem: "npm", Name: "lib"},
			Ranges: []vuln.Range{{Type: "SEMVER", Events: []vuln.Event{{Introduced: "0"}, {Fixed: "1.2.0"}}},
				{Type: "SEMVER", Events: []vuln.Event{{Introduced: "2.0.0"}, {LastAffected: "2.1.0"}}}}}}},
		{ID: "A-2", Modified: now, Affected: []vuln.Affected{{Package: vuln.Package{Ecosystem: "PyPI", Name: "Some_Lib"},
			Versions: []string{"1.0"}}}},
		{ID: "A-3", Modified: now, Withdrawn: &withdrawn, Affected: []vuln.Affected{{Package: vuln.Package{Ecosystem: "npm", Name: "lib"},
			Ranges: []vuln.Range{{Type: "SEMVER", Events: []vuln.Event{{Introduced: "0"}}}}}}},
		{ID: "A-4", Modified: now, Affected: []vuln.Affected{{Package: vuln.Package{Ecosystem: "Maven", Name: "org.x:core"},
			Ranges: []vuln.Range{{Type: "ECOSYSTEM", Events: []vuln.Event{{Introduced: "4.1.0"}, {Fixed: "4.1.100.Final"}}}}}}},
	})
	for _, c := range []struct {
		eco, name, version string
		want               []string
	}{
		{"npm", "lib", "0.0.1", []string{"A-1"}},
		{"npm", "lib", "1.2.0-rc.1", []string{"A-1"}},
		{"npm", "lib", "1.2.0", nil},
		{"npm", "lib", "2.1.0", []string{"A-1"}},
		{"npm", "lib", "2.1.1", nil},
		{"PyPI", "some-lib", "1.0.0", []string{"A-2"}}, // 1.0 == 1.0.0 in PEP 440, names normalised
		{"PyPI", "some.lib", "1.1", nil},
		{"Maven", "org.x:core", "4.1.99.Final", []string{"A-4"}},
		{"Maven", "org.x:core", "4.1.100.Final", nil},
	} {
		got, err := db.Match(c.eco, c.name, c.version)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		var ids []string
		for _, f := range got {
			ids = append(ids, f.ID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s %s@%s: %v, want %v", c.eco, c.name, c.version, ids, c.want)
		}
	}
	if f, _ := db.Match("npm", "lib", "1.0.0"); len(f) != 1 || !slices.Equal(f[0].Fixed, []string{"1.2.0"}) || f[0].Severity != vuln.Unknown {
		t.Errorf("finding: %+v", f)
	}
}

// TestParseBounds: what cannot be used is refused, long texts are cut.
func TestParseBounds(t *testing.T) {
	for _, raw := range []string{`{}`, `{"id":"a/b","modified":"2024-01-01T00:00:00Z"}`, `[1]`,
		`{"id":"X","modified":"2024-01-01T00:00:00Z","affected":` + strings.Repeat(`{}`, 0) + `"no"}`} {
		if _, err := vuln.Parse([]byte(raw)); err == nil {
			t.Errorf("accepted %s", raw)
		}
	}
	if _, err := vuln.Parse([]byte(`{"id":"X","modified":"2024-01-01T00:00:00Z","details":"` + strings.Repeat("x", vuln.MaxRecord) + `"}`)); err == nil {
		t.Error("accepted a record larger than the bound")
	}
	a, err := vuln.Parse([]byte(`{"id":"X","modified":"2024-01-01T00:00:00Z","details":"` + strings.Repeat("é", 20000) + `"}`))
	if err != nil || len(a.Details) > 16<<10 {
		t.Errorf("details %d bytes, %v", len(a.Details), err)
	}
}

// TestSemverRange: an entry's ranges and versions as npm's range syntax.
func TestSemverRange(t *testing.T) {
	af := &vuln.Affected{Ranges: []vuln.Range{
		{Type: "SEMVER", Events: []vuln.Event{{Introduced: "0"}, {Fixed: "1.2.3"}, {Introduced: "2.0.0"}, {LastAffected: "2.0.5"}}},
		{Type: "SEMVER", Events: []vuln.Event{{Introduced: "3.0.0"}}}}, Versions: []string{"0.9.1"}}
	if got := vuln.SemverRange([]*vuln.Affected{af}); got != "<1.2.3 || >=2.0.0 <=2.0.5 || >=3.0.0 || 0.9.1" {
		t.Errorf("range %q", got)
	}
}
