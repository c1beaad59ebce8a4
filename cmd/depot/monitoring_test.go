package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/depot-registry/depot/shared/auth/ldap/ldaptest"
)

// metricName is a Depot metric in a PromQL expression or a description.
var metricName = regexp.MustCompile(`\bdepot_[a-z0-9_]+`)

// exported reads the sample names of a /metrics answer.
func exported(text string) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// TestMonitoringUsesExportedMetrics: the alert rules and the Grafana
// dashboard in deploy/monitoring name only metrics an origin and an edge
// export, read from the real processes after some traffic.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	monitoring := filepath.Join("..", "..", "deploy", "monitoring")
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(monitoring, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	used := map[string][]string{} // metric -> where
	note := func(text, where string) {
		for _, m := range metricName.FindAllString(text, -1) {
			used[m] = append(used[m], where)
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %q of group %s lacks a name, expr, severity or summary", r.Alert, g.Name)
			}
			note(r.Expr, "alert "+r.Alert)
			note(r.Annotations["description"], "alert "+r.Alert+" description")
		}
	}
	var dash struct {
		Title  string
		Panels []struct {
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	raw, err = os.ReadFile(filepath.Join(monitoring, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	panels := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			note(q.Expr, "panel "+p.Title)
		}
	}
	if alerts < 10 || panels < 20 || len(used) < 30 {
		t.Fatalf("%d alerts, %d panels, %d metrics: the files were not read as meant", alerts, panels, len(used))
	}

	// An origin with a directory (its sync has no user to look up), and an
	// edge with a repository, an upload, a read through the edge and a
	// garbage collection.
	dir := ldaptest.Start(t, ldaptest.Options{})
	es := startEdgeSite(t, "files", "generic", "--ldap-url", dir.URL, "--ldap-base-dn", ldaptest.People, "--ldap-sync-interval", "1")
	call(t, "PUT", es.o.url+"/generic/files/pkg/1.0/a.bin", es.basic, strings.NewReader("bytes"), 201)
	waitFor(t, 20*time.Second, "the edge to serve the upload", func() bool {
		req, _ := http.NewRequest("GET", es.e.url+"/generic/files/pkg/1.0/a.bin", nil)
		req.Header.Set("Authorization", es.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200
	})
	call(t, "POST", es.o.url+"/api/v1/admin/cleanup", es.tok, nil, 200)
	var have map[string]bool
	waitFor(t, 20*time.Second, "the origin to export the edge's report", func() bool {
		have = exported(string(call(t, "GET", es.o.url+"/metrics", "", nil, 200)))
		return have["depot_edge_node_lag_entries"] && have["depot_ldap_sync_last_success_timestamp_seconds"]
	})
	for name := range exported(string(call(t, "GET", es.e.url+"/metrics", "", nil, 200))) {
		have[name] = true
	}
	var missing []string
	for name, where := range used {
		if !have[name] {
			missing = append(missing, name+" (in "+strings.Join(slices.Compact(where), ", ")+")")
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("deploy/monitoring uses metrics Depot does not export:\n  %s", strings.Join(missing, "\n  "))
	}
}
