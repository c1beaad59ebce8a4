package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestEdgeForwardsUnassignedReads: through an edge, a repository not
// assigned to it is read at an origin (the answer says so), so a write
// there is read back from the same address; one that does not exist is
// the origin's 404.
func TestEdgeForwardsUnassignedReads(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	call(t, "POST", es.o.url+"/api/v1/repositories", es.tok, strings.NewReader(`{"name":"elsewhere","format":"generic"}`), 201)
	edge := es.e.url
	call(t, "PUT", edge+"/generic/elsewhere/tool/1.0/tool.bin", es.basic, strings.NewReader("not assigned here"), 201)
	req, _ := http.NewRequest("GET", edge+"/generic/elsewhere/tool/1.0/tool.bin", nil)
	req.Header.Set("Authorization", es.basic)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Depot-Forwarded") != "origin" {
		t.Fatalf("read back through the edge: %s, X-Depot-Forwarded %q", resp.Status, resp.Header.Get("X-Depot-Forwarded"))
	}
	if got := call(t, "GET", edge+"/generic/elsewhere/tool/1.0/tool.bin", es.basic, nil, 200); string(got) != "not assigned here" {
		t.Fatalf("read back %q", got)
	}
	if got := call(t, "GET", edge+"/generic/nowhere/tool/1.0/tool.bin", es.basic, nil, 404); !strings.Contains(string(got), "nowhere not found") {
		t.Fatalf("a repository that does not exist: %s", got)
	}
	// The assigned one is still the edge's own answer.
	call(t, "PUT", edge+"/generic/files/tool/1.0/tool.bin", es.basic, strings.NewReader("assigned"), 201)
	req, _ = http.NewRequest("GET", edge+"/generic/files/tool/1.0/tool.bin", nil)
	req.Header.Set("Authorization", es.basic)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Depot-Forwarded") != "" {
		t.Fatalf("an assigned repository: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
