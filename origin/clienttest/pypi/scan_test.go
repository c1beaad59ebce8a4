package pypi_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// TestScansAndPolicies: a project twine uploaded under a name PyPI
// normalises (Werkzeug) is scanned on upload with the findings the real
// advisory data names, its pinned requirement too; a policy blocking
// high findings stops pip installing it, with the policy and advisory
// in what pip shows, and lets the fixed version through.
func TestScansAndPolicies(t *testing.T) {
	clienttest.RequireClients(t, "twine", "python3", debianPython)
	e := clienttest.Start(t)
	repoID := e.CreateRepo("py", "pypi", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	e.DoHeader("POST", "/api/v1/security/advisories?filename=pypi.zip", e.Admin, vulntest.Zip(t, "PyPI"),
		map[string]string{"Content-Type": "application/zip"}).Want(200)

	vulnerable := build(t, project{Name: "Werkzeug", Module: "werkzeug", Version: "3.0.0", Requires: []string{"urllib3==1.26.17", "idna>=3"},
		Body: "VERSION = '3.0.0'\n"})
	fixed := build(t, project{Name: "Werkzeug", Module: "werkzeug", Version: "3.0.6", Body: "VERSION = '3.0.6'\n"})
	for _, files := range [][]string{vulnerable, fixed} {
		if out, err := twine(t, e, "py", alice.Name, alice.Token, nil, files...); err != nil {
			t.Fatalf("twine: %v\n%s", err, out)
		}
	}
	var scans struct {
		Scans []meta.Scan
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		e.Do("GET", "/api/v1/security/scans?repository_id=py&status=completed", e.Admin, nil).Want(200).JSON(&scans)
		if len(scans.Scans) == 4 || time.Now().After(end) {
			break
		}
	}
	// An sdist and a wheel each: the wheel's METADATA declares the
	// requirements (urllib3 pinned: a medium finding), the sdist's
	// PKG-INFO does not.
	var got []string
	for _, s := range scans.Scans {
		v := s.Vulnerabilities
		got = append(got, fmt.Sprintf("%s %s high %d medium %d", s.Version, s.Trigger, v.High, v.Medium))
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"3.0.0 upload high 1 medium 0", "3.0.0 upload high 1 medium 1", "3.0.6 upload high 0 medium 0",
		"3.0.6 upload high 0 medium 0"}) {
		t.Fatalf("scans of the uploads: %v", got)
	}

	e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "no highs in python",
		"scope": map[string]any{"repositories": []string{"py"}}, "rules": map[string]any{"severity_threshold": "high", "block_download": true}}).Want(201)
	index := "http://" + alice.Name + ":" + alice.Token + "@" + clienttest.HostPort(e) + "/pypi/py/simple/"
	pip := func(req string) (string, error) {
		bin := venv(t, "python3")
		return clienttest.TryRun(clienttest.Cmd{Env: pipEnv(t), Name: filepath.Join(bin, "pip"), Args: []string{
			"install", "--no-cache-dir", "--no-deps", "--index-url", index, req}})
	}
	out, err := pip("Werkzeug==3.0.0")
	if err == nil || !strings.Contains(out, "403") || !strings.Contains(out, "PYSEC-2023-221") || !strings.Contains(out, "no highs in python") {
		t.Errorf("pip install of the vulnerable version: %v\n%s", err, out)
	}
	if out, err := pip("Werkzeug==3.0.6"); err != nil {
		t.Errorf("pip install of the fixed version: %v\n%s", err, out)
	}
}

// TestPipAudit: pip-audit, told the registry's OSV query address
// (--osv-url), audits a requirements file offline against the PyPI
// advisories loaded here: each vulnerable pin with exactly the findings
// of the data's test case, the unaffected version with none; with no
// advisories of PyPI loaded the audit fails instead of finding nothing.
func TestPipAudit(t *testing.T) {
	bins := clienttest.RequireClients(t, "pip-audit")
	e := clienttest.Start(t)
	alice := clienttest.NewUser(e, "alice")
	work, home := t.TempDir(), clienttest.Home(t)
	osvURL := e.URL + "/api/v1/security/osv/v1/query"
	// The credentials in ~/.netrc, which requests reads: in the URL,
	// pip-audit would print them with any error.
	clienttest.WriteFile(t, filepath.Join(home, ".netrc"), "machine 127.0.0.1 login "+alice.Name+" password "+alice.Token+"\n")
	audit := func(reqs string) (string, error) {
		clienttest.WriteFile(t, filepath.Join(work, "requirements.txt"), reqs)
		return clienttest.TryRun(clienttest.Cmd{Dir: work, Name: bins["pip-audit"], Env: []string{"HOME=" + home},
			Args: []string{"--requirement", "requirements.txt", "--no-deps", "--disable-pip", "--vulnerability-service", "osv",
				"--osv-url", osvURL, "--format", "json", "--progress-spinner", "off", "--cache-dir", filepath.Join(work, "cache")}})
	}
	clienttest.LoadAdvisories(t, e, "npm")
	if out, err := audit("urllib3==1.26.17\n"); err == nil || !strings.Contains(out, "no advisory data loaded for PyPI") {
		t.Fatalf("an audit with no PyPI advisories loaded: %v\n%s", err, out)
	}
	clienttest.LoadAdvisories(t, e, "PyPI")
	cases := map[string]vulntest.Case{}
	var reqs strings.Builder
	for _, c := range vulntest.Cases(t) {
		if c.Ecosystem == "PyPI" && (c.Name == "urllib3" || c.Name == "cryptography" || c.Name == "idna") {
			cases[strings.ToLower(c.Name)] = c
			fmt.Fprintf(&reqs, "%s==%s\n", c.Name, c.Affected)
		}
	}
	reqs.WriteString("six==1.16.0\n")
	out, err := audit(reqs.String())
	if err == nil { // pip-audit exits 1 when it finds vulnerabilities
		t.Fatalf("pip-audit found nothing:\n%s", out)
	}
	var report struct {
		Dependencies []struct {
			Name, Version string
			Vulns         []struct {
				ID          string   `json:"id"`
				FixVersions []string `json:"fix_versions"`
			} `json:"vulns"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report); err != nil || len(report.Dependencies) != 4 {
		t.Fatalf("pip-audit's report (%v):\n%s", err, out)
	}
	for _, d := range report.Dependencies {
		var got, want []string
		for _, v := range d.Vulns {
			got = append(got, v.ID)
		}
		if c, ok := cases[d.Name]; ok {
			for _, f := range c.Expected {
				want = append(want, f.ID)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s: pip-audit reports %v, want %v", d.Name, d.Version, got, want)
		}
	}
	c := cases["urllib3"]
	if out, err := audit("urllib3==" + c.NotAffected + "\n"); err != nil || !strings.Contains(out, `"vulns": []`) {
		t.Errorf("urllib3 %s: %v\n%s", c.NotAffected, err, out)
	}
}
