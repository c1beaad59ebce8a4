package pypi_test

import (
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
