package npm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// scanEvent is the data of a scan.completed event.
type scanEvent struct {
	ScanID          string         `json:"scan_id"`
	PackageName     string         `json:"package_name"`
	Vulnerabilities map[string]int `json:"vulnerabilities"`
	ReportURL       string         `json:"report_url"`
}

type scanView struct {
	meta.Scan
	Report *struct {
		Packages []struct{ Name, Version, Source string }
		Findings []struct {
			ID       string   `json:"id"`
			Package  string   `json:"package"`
			Severity string   `json:"severity"`
			Source   string   `json:"source"`
			Fixed    []string `json:"fixed_versions"`
		}
		NotScanned []struct{ What, Reason string } `json:"not_scanned"`
	}
}

// TestScans: packages npm published are scanned against the real
// advisory data loaded through the API: the package itself and the
// dependencies it pins, with exactly the findings the data's test cases
// name; a range is reported as not scanned; a fixed version has none;
// each completed scan is a scan.completed event with a working report
// URL; a viewer reads scans but may not start one.
func TestScans(t *testing.T) {
	e := clienttest.Start(t)
	repoID, alice := setup(t, e)
	c := newClient(t, e, "js", tokenAuth(alice))
	publish := func(name, version string, deps map[string]string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "pkg")
		raw, _ := json.Marshal(map[string]any{"name": name, "version": version, "main": "index.js", "dependencies": deps})
		clienttest.WriteFile(t, filepath.Join(dir, "package.json"), string(raw))
		clienttest.WriteFile(t, filepath.Join(dir, "index.js"), "module.exports = 1;\n")
		clienttest.WriteFile(t, filepath.Join(dir, ".npmrc"), c.npmrc)
		c.npm(dir, "publish")
		var list struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/"+name+"/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&list)
		for _, v := range list.Versions {
			if v.Version == version {
				return v.ArtifactID
			}
		}
		t.Fatalf("%s@%s not listed: %+v", name, version, list)
		return ""
	}
	express := publish("express", "4.18.2", map[string]string{"marked": "0.3.3", "minimist": "^1.2.5"})
	lodash := publish("lodash", "4.17.21", nil)

	// No advisories yet: the scan says so.
	var sc meta.Scan
	e.Do("POST", "/api/v1/security/scans", alice.Token, map[string]string{"artifact_id": lodash}).Want(202).JSON(&sc)
	if sc.Status != meta.ScanQueued && sc.Status != meta.ScanRunning {
		t.Fatalf("a new scan: %+v", sc)
	}
	wait := func(id string) scanView {
		t.Helper()
		var v scanView
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			e.Do("GET", "/api/v1/security/scans/"+id, alice.Token, nil).Want(200).JSON(&v)
			if v.Status == meta.ScanCompleted || v.Status == meta.ScanFailed {
				return v
			}
			if time.Now().After(end) {
				t.Fatalf("scan %s still %s", id, v.Status)
			}
		}
	}
	if v := wait(sc.ID); v.Status != meta.ScanCompleted || v.Report == nil || len(v.Report.NotScanned) != 1 ||
		v.Report.NotScanned[0].Reason != "no advisories are loaded (POST /api/v1/security/advisories)" {
		t.Fatalf("a scan without advisories: %+v", v)
	}

	e.DoHeader("POST", "/api/v1/security/advisories?filename=osv.zip", alice.Token, vulntest.Zip(t, "npm"), map[string]string{"Content-Type": "application/zip"}).
		WantError(403, "FORBIDDEN")
	var loaded struct {
		Loaded   meta.AdvisoryLoad
		Database meta.AdvisoryDB
	}
	e.DoHeader("POST", "/api/v1/security/advisories?filename=osv.zip", e.Admin, vulntest.Zip(t, "npm"), map[string]string{"Content-Type": "application/zip"}).
		Want(200).JSON(&loaded)
	if loaded.Loaded.Added < 470 || loaded.Database.Ecosystems["npm"] < 470 || loaded.Database.Loads[0].Source != "osv.zip (474 records)" {
		t.Fatalf("loaded: %+v", loaded)
	}

	e.Do("POST", "/api/v1/security/scans", alice.Token, map[string]string{"artifact_id": express}).Want(202).JSON(&sc)
	expressScan := sc.ID
	v := wait(sc.ID)
	var found []string
	for _, f := range v.Report.Findings {
		found = append(found, fmt.Sprintf("%s %s %s %s", f.Source, f.Package, f.ID, f.Severity))
	}
	slices.Sort(found)
	want := []string{"dependency marked x_NSWG-ECO-101 medium", "dependency marked x_NSWG-ECO-23 high", "package express GHSA-rv95-896h-c2vc medium"}
	if !slices.Equal(found, want) {
		t.Errorf("findings %q, want %q", found, want)
	}
	if v.Vulnerabilities != (meta.Vulnerabilities{High: 1, Medium: 2}) || v.Packages != 2 || len(v.Report.NotScanned) != 1 ||
		v.Report.NotScanned[0].What != "minimist ^1.2.5" {
		t.Errorf("scan: %+v %+v", v.Vulnerabilities, v.Report)
	}
	e.Do("POST", "/api/v1/security/scans", alice.Token, map[string]string{"artifact_id": lodash}).Want(202).JSON(&sc)
	if v := wait(sc.ID); v.Vulnerabilities != (meta.Vulnerabilities{}) || len(v.Report.Findings) != 0 || v.Packages != 1 {
		t.Errorf("lodash 4.17.21: %+v", v)
	}

	var evs struct {
		Events []struct {
			Data scanEvent `json:"data"`
		} `json:"events"`
	}
	e.Do("GET", "/api/v1/events?since=0&types=scan.completed", e.Admin, nil).Want(200).JSON(&evs)
	i := slices.IndexFunc(evs.Events, func(ev struct {
		Data scanEvent `json:"data"`
	}) bool {
		return ev.Data.ScanID == expressScan
	})
	if i < 0 {
		t.Fatalf("no scan.completed event of scan %s: %+v", expressScan, evs.Events)
	}
	ev := evs.Events[i].Data
	if ev.PackageName != "express" || ev.Vulnerabilities["high"] != 1 || ev.Vulnerabilities["medium"] != 2 {
		t.Errorf("event: %+v", ev)
	}
	// Absolute with the origin's address or --external-url; this test's
	// origin serves without listening itself, so its URL is the path.
	if got := e.Do("GET", strings.TrimPrefix(ev.ReportURL, e.URL), alice.Token, nil).Want(200).Map(); got["id"] != ev.ScanID {
		t.Errorf("report_url %s answers %v", ev.ReportURL, got["id"])
	}

	// Scan on upload: a new version is scanned by itself; a repository
	// whose scan_on_upload is false is not.
	old := publish("braces", "3.0.2", nil)
	var auto struct {
		Scans []meta.Scan
		Total int
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/security/scans?artifact_id="+old+"&status=completed", alice.Token, nil).Want(200).JSON(&auto)
		if auto.Total == 1 || time.Now().After(end) {
			break
		}
	}
	if auto.Total != 1 || auto.Scans[0].Trigger != "upload" || auto.Scans[0].Vulnerabilities.High != 1 || auto.Scans[0].RequestedBy != "alice" {
		t.Fatalf("the scan of an upload: %+v", auto)
	}
	// A change of its record (its properties) is no upload: not scanned
	// again (checked below, once the follower has passed it).
	e.Do("PATCH", "/api/v1/artifacts/"+old+"/properties", alice.Token, map[string]any{"properties": map[string]any{"qa": "ok"}}).Want(200)
	e.Do("PUT", "/api/v1/repositories/js", e.Admin, map[string]any{"settings": map[string]string{"scan_on_upload": "false"}}).Want(200)
	quiet := publish("minimist", "1.2.5", nil)
	// An upload to another repository after it: once its scan is queued,
	// the follower (which reads the feed in order) has passed minimist.
	otherID := e.CreateRepo("js2", "npm", false)
	e.Grant(otherID, alice.ID, false, "read", "write")
	d := newClient(t, e, "js2", tokenAuth(alice))
	d.publish("handlebars", "4.5.3", "later")
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/security/scans?repository_id=js2", alice.Token, nil).Want(200).JSON(&auto)
		if auto.Total > 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the upload after minimist was not scanned")
		}
	}
	e.Do("GET", "/api/v1/security/scans?artifact_id="+quiet, alice.Token, nil).Want(200).JSON(&auto)
	if auto.Total != 0 {
		t.Errorf("scanned with scan_on_upload false: %+v", auto)
	}
	e.Do("GET", "/api/v1/security/scans?artifact_id="+old, alice.Token, nil).Want(200).JSON(&auto)
	if auto.Total != 1 {
		t.Errorf("scanned again when its properties changed: %+v", auto)
	}

	viewer := clienttest.NewUser(e, "vera")
	e.Grant(repoID, viewer.ID, false, "read")
	var list struct {
		Scans []meta.Scan
		Total int
	}
	e.Do("GET", "/api/v1/security/scans?artifact_id="+express, viewer.Token, nil).Want(200).JSON(&list)
	if list.Total < 2 || !slices.ContainsFunc(list.Scans, func(s meta.Scan) bool { return s.ID == expressScan }) ||
		list.Scans[len(list.Scans)-1].Trigger != "upload" {
		t.Errorf("a viewer's list: %+v", list)
	}
	e.Do("POST", "/api/v1/security/scans", viewer.Token, map[string]string{"artifact_id": express}).WantError(403, "FORBIDDEN")

	// A new advisory naming a stored, clean version: the stored package
	// is scanned again and the finding reported.
	record := `{"id": "DEPOT-TEST-0001", "modified": "2026-11-01T00:00:00Z", "summary": "a test advisory",
		"database_specific": {"severity": "CRITICAL"},
		"affected": [{"package": {"ecosystem": "npm", "name": "lodash"}, "ranges": [{"type": "SEMVER", "events": [{"introduced": "4.17.20"}, {"fixed": "4.17.22"}]}]}]}`
	e.DoHeader("POST", "/api/v1/security/advisories", e.Admin, record, nil).Want(200)
	var flagged struct {
		Scans []meta.Scan
	}
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/security/scans?artifact_id="+lodash+"&status=completed", alice.Token, nil).Want(200).JSON(&flagged)
		if len(flagged.Scans) > 0 && flagged.Scans[0].Vulnerabilities.Critical == 1 || time.Now().After(end) {
			break
		}
	}
	if len(flagged.Scans) == 0 || flagged.Scans[0].Vulnerabilities.Critical != 1 || flagged.Scans[0].Trigger != "advisories" {
		t.Errorf("after the new advisory, lodash's scans: %+v", flagged.Scans)
	}
	e.Do("POST", "/api/v1/security/scans", alice.Token, map[string]string{"artifact_id": express, "scanner": "trivy"}).WantField("scanner")
}

// TestPolicies: a policy blocking downloads of high findings stops `npm
// install` of a vulnerable version with a message naming the policy and
// the advisory (at an edge too, from its replica), lets the fixed
// version through, and an allow-list entry unblocks until it expires;
// the origin records policy.violated.
func TestPolicies(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		e.DoHeader("POST", "/api/v1/security/advisories?filename=npm.zip", e.Admin, vulntest.Zip(t, "npm"),
			map[string]string{"Content-Type": "application/zip"}).Want(200)
		var pol meta.Policy
		e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "no highs",
			"scope": map[string]any{"formats": []string{"npm"}}, "rules": map[string]any{"severity_threshold": "high", "block_download": true}}).
			Want(201).JSON(&pol)
		e.Do("POST", "/api/v1/security/policies", alice.Token, map[string]any{"name": "mine"}).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "bad", "rules": map[string]any{"severity_threshold": "severe"}}).
			WantField("rules.severity_threshold")
		c.publish("braces", "3.0.2", "vulnerable")
		c.publish("braces", "3.0.3", "fixed")

		install := func(version string) (string, error) {
			d := newClient(t, e, "js", tokenAuth(alice)) // a cold cache
			return d.tryNPM(d.project(), "install", "braces@"+version, "--no-audit", "--no-fund")
		}
		eventually := func(what string, ok func() bool) {
			t.Helper()
			for end := time.Now().Add(30 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%s: not within 30 s", what)
				}
			}
		}
		var out string
		eventually("npm install braces@3.0.2 blocked", func() bool {
			var err error
			out, err = install("3.0.2")
			return err != nil && strings.Contains(out, "403")
		})
		if !strings.Contains(out, `security policy "no highs"`) || !strings.Contains(out, "GHSA-grv7-fg5c-xmjg") {
			t.Errorf("npm says:\n%s", out)
		}
		if out, err := install("3.0.3"); err != nil {
			t.Fatalf("the fixed version: %v\n%s", err, out)
		}

		until := time.Now().Add(time.Hour)
		rules := func(expires time.Time) map[string]any {
			return map[string]any{"rules": map[string]any{"severity_threshold": "high", "block_download": true,
				"allowlist": []map[string]any{{"id": "CVE-2024-4068", "reason": "not reachable in our use", "expires_at": expires}}}}
		}
		e.Do("PUT", "/api/v1/security/policies/"+pol.ID, e.Admin, rules(until)).Want(200).JSON(&pol)
		if len(pol.Rules.Allow) != 1 || pol.Rules.Allow[0].AddedBy != "admin" {
			t.Errorf("the allow-list: %+v", pol.Rules.Allow)
		}
		eventually("allow-listed by the advisory's alias", func() bool { _, err := install("3.0.2"); return err == nil })
		e.Do("PUT", "/api/v1/security/policies/"+pol.ID, e.Admin, rules(time.Now().Add(-time.Minute))).Want(200)
		eventually("blocked once the entry expired", func() bool { _, err := install("3.0.2"); return err != nil })

		// Blocking uploads: a vulnerable version is refused and nothing of
		// it is stored; a fixed one is published.
		e.Do("PUT", "/api/v1/security/policies/"+pol.ID, e.Admin, map[string]any{"rules": map[string]any{"severity_threshold": "high",
			"block_download": true, "block_upload": true}}).Want(200)
		out, err := c.tryNPM(c.pkg("braces", "3.0.1", "refused"), "publish", "--tag", "old")
		if err == nil || !strings.Contains(out, "403") || !strings.Contains(out, `upload blocked by security policy "no highs"`) ||
			!strings.Contains(out, "GHSA-grv7-fg5c-xmjg") {
			t.Fatalf("npm publish of a vulnerable version under block_upload: %v\n%s", err, out)
		}
		var versions struct {
			Versions []struct{ Version string } `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/braces/versions", e.Admin, nil).Want(200).JSON(&versions)
		if len(versions.Versions) != 2 {
			t.Fatalf("the refused version is listed: %+v", versions)
		}
		c.publish("braces", "3.0.4", "fixed again")

		{ // the violations are events, an edge's refusals too (the edge reports them)
			var evs struct {
				Events []struct {
					Data struct {
						Action     string   `json:"action"`
						Version    string   `json:"version"`
						PolicyName string   `json:"policy_name"`
						Advisories []string `json:"advisories"`
						User       struct{ Username string }
					} `json:"data"`
				} `json:"events"`
			}
			// Downloads' and the upload's (an edge's refusals reach the
			// origin within a second or two, maybe after the upload's).
			upload, download := -1, -1
			eventually("policy.violated recorded", func() bool {
				e.Do("GET", "/api/v1/events?since=0&types=policy.violated", e.Admin, nil).Want(200).JSON(&evs)
				for i, ev := range evs.Events {
					switch ev.Data.Action {
					case "upload":
						upload = i
					case "download":
						download = i
					}
				}
				return upload >= 0 && download >= 0
			})
			if d := evs.Events[download].Data; d.PolicyName != "no highs" || len(d.Advisories) != 1 || d.User.Username != "alice" {
				t.Errorf("policy.violated: %+v", d)
			}
			if d := evs.Events[upload].Data; d.Version != "3.0.1" || d.User.Username != "alice" || len(d.Advisories) != 1 {
				t.Errorf("policy.violated of the upload: %+v", d)
			}
		}
	})
}

// TestAudit: `npm audit` against the registry, with no internet, reports
// the advisories of the database loaded into it for the project's tree
// (through an edge too, which hands the audit to an origin), and not the
// clean package.
func TestAudit(t *testing.T) {
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		e.DoHeader("POST", "/api/v1/security/advisories?filename=npm.zip", e.Admin, vulntest.Zip(t, "npm"),
			map[string]string{"Content-Type": "application/zip"}).Want(200)
		c.publish("lodash", "4.17.11", "old lodash")
		c.publish("minimist", "1.2.5", "old minimist")
		c.publish("braces", "3.0.3", "fixed braces")
		dir := c.project()
		c.npm(dir, "install", "lodash@4.17.11", "minimist@1.2.5", "braces@3.0.3", "--save-exact", "--no-audit", "--no-fund")
		out, err := c.tryNPM(dir, "audit", "--json")
		if err == nil {
			t.Fatalf("npm audit found nothing:\n%s", out)
		}
		var report struct {
			Vulnerabilities map[string]struct {
				Severity string `json:"severity"`
				Via      []any  `json:"via"`
			} `json:"vulnerabilities"`
			Metadata struct {
				Vulnerabilities map[string]int `json:"vulnerabilities"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report); err != nil {
			t.Fatalf("npm audit --json: %v\n%s", err, out)
		}
		if report.Vulnerabilities["lodash"].Severity != "critical" || report.Vulnerabilities["minimist"].Severity != "critical" {
			t.Errorf("npm audit: %+v", report.Vulnerabilities)
		}
		if _, ok := report.Vulnerabilities["braces"]; ok {
			t.Errorf("npm audit reports braces 3.0.3: %+v", report.Vulnerabilities["braces"])
		}

		// The quick audit npm falls back to when the bulk request fails:
		// the tree as its old lockfile nests it; each advisory affecting a
		// version in it, with the paths it was found at.
		tree := `{"name":"app","version":"1.0.0","requires":{"lodash":"4.17.11","tool":"1.0.0"},"dependencies":{
			"lodash":{"version":"4.17.11"},"braces":{"version":"3.0.3","dev":true},
			"tool":{"version":"1.0.0","requires":{"lodash":"4.17.11","minimist":"1.2.5"},
				"dependencies":{"lodash":{"version":"4.17.11"},"minimist":{"version":"1.2.5"}}}}}`
		var quick struct {
			Advisories map[string]struct {
				ModuleName         string `json:"module_name"`
				VulnerableVersions string `json:"vulnerable_versions"`
				Severity           string `json:"severity"`
				Findings           []struct {
					Version string   `json:"version"`
					Paths   []string `json:"paths"`
				} `json:"findings"`
			} `json:"advisories"`
			Metadata struct {
				Vulnerabilities   map[string]int `json:"vulnerabilities"`
				TotalDependencies int            `json:"totalDependencies"`
				DevDependencies   int            `json:"devDependencies"`
			} `json:"metadata"`
		}
		e.Do("POST", "/npm/js/-/npm/v1/security/audits/quick", "Bearer "+alice.Token, []byte(tree)).Want(200).JSON(&quick)
		modules := map[string]int{}
		for _, a := range quick.Advisories {
			modules[a.ModuleName]++
			if a.VulnerableVersions == "" || len(a.Findings) != 1 {
				t.Errorf("quick audit advisory: %+v", a)
			}
			if a.ModuleName == "lodash" && !slices.Equal(a.Findings[0].Paths, []string{"lodash", "tool>lodash"}) &&
				!slices.Equal(a.Findings[0].Paths, []string{"tool>lodash", "lodash"}) {
				t.Errorf("lodash found at %v", a.Findings[0].Paths)
			}
		}
		for _, c := range vulntest.Cases(t) {
			if c.Ecosystem == "npm" && (c.Name == "lodash" || c.Name == "minimist") && modules[c.Name] != len(c.Expected) {
				t.Errorf("quick audit: %d advisories for %s, the test case names %d", modules[c.Name], c.Name, len(c.Expected))
			}
		}
		if modules["braces"] != 0 || quick.Metadata.TotalDependencies != 5 || quick.Metadata.DevDependencies != 1 || quick.Metadata.Vulnerabilities["critical"] == 0 {
			t.Errorf("quick audit: %v %+v", modules, quick.Metadata)
		}
	})
}
