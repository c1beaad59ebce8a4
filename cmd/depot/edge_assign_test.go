package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEdgeAssignThenWrite: a file uploaded at the origin right after its
// repository is assigned to an edge is served by the edge. The edge's long
// poll, running since before the assignment, used to skip the new
// repository's entries and move the replica past them for good.
func TestEdgeAssignThenWrite(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	o, e := es.o, es.e
	assign := func(name string) string {
		var repo struct{ ID string }
		if err := json.Unmarshal(call(t, "POST", o.url+"/api/v1/repositories", es.tok, strings.NewReader(`{"name":"`+name+`","format":"generic"}`), 201), &repo); err != nil {
			t.Fatal(err)
		}
		call(t, "POST", o.url+"/api/v1/edge-nodes/"+es.node.ID+"/repositories", es.tok, strings.NewReader(`{"repository_ids":["`+repo.ID+`"]}`), 200)
		return repo.ID
	}
	follows := func(id string) bool {
		var h struct {
			Node struct {
				RepositoryIDs []string `json:"repository_ids"`
			} `json:"node"`
		}
		_ = json.Unmarshal(call(t, "GET", e.url+"/api/v1/health", es.tok, nil, 200), &h)
		return slices.Contains(h.Node.RepositoryIDs, id)
	}
	served := func(name, file, want string) bool {
		req, _ := http.NewRequest("GET", e.url+"/generic/"+name+"/"+file, nil)
		req.Header.Set("Authorization", es.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && string(b) == want
	}
	// Assigned, caught up on, then written to: the write comes with the
	// poll that was waiting when the repository was assigned.
	for i := range 4 {
		name := fmt.Sprintf("late-%d", i)
		id := assign(name)
		waitFor(t, 10*time.Second, "the edge to follow "+name, func() bool { return follows(id) })
		call(t, "PUT", o.url+"/generic/"+name+"/a/1.0/a.txt", es.basic, strings.NewReader("a of "+name), 201)
		waitFor(t, 5*time.Second, "the edge to serve a.txt of "+name, func() bool { return served(name, "a/1.0/a.txt", "a of "+name) })
	}
	// Assigned and written at once, many times.
	for i := range 8 {
		name := fmt.Sprintf("now-%d", i)
		assign(name)
		call(t, "PUT", o.url+"/generic/"+name+"/a/1.0/a.txt", es.basic, strings.NewReader("a of "+name), 201)
	}
	for i := range 8 {
		name := fmt.Sprintf("now-%d", i)
		waitFor(t, 10*time.Second, "the edge to serve a.txt of "+name, func() bool { return served(name, "a/1.0/a.txt", "a of "+name) })
	}
}

// TestEdgeMinIndex: a client that wrote at the origin and sends the
// write's X-Depot-Index as X-Depot-Min-Index reads it at the edge at once,
// every time; a malformed index is refused.
func TestEdgeMinIndex(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	for i := range 40 {
		path := fmt.Sprintf("/generic/files/p/%d/f.txt", i)
		req, _ := http.NewRequest("PUT", es.o.url+path, strings.NewReader("v"))
		req.Header.Set("Authorization", es.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		idx := resp.Header.Get("X-Depot-Index")
		if resp.StatusCode != 201 || idx == "" {
			t.Fatalf("PUT: %d, index %q", resp.StatusCode, idx)
		}
		req, _ = http.NewRequest("GET", es.e.url+path, nil)
		req.Header.Set("Authorization", es.basic)
		req.Header.Set("X-Depot-Min-Index", idx)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("#%d: a read at the edge with X-Depot-Min-Index %s: %d", i, idx, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", es.e.url+"/generic/files/p/0/f.txt", nil)
	req.Header.Set("Authorization", es.basic)
	req.Header.Set("X-Depot-Min-Index", "soon")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("a malformed X-Depot-Min-Index: %d", resp.StatusCode)
	}
}

// TestEdgeNotThrottledByItsClients: an edge's own requests (heartbeats,
// its feed, the catch-up after each write it forwards) have a bucket of
// their own, larger than a user's: a burst of writes through the edge
// used to spend the node's API rate limit, and then its feed and
// heartbeats were refused (429) for the rest of the window.
func TestEdgeNotThrottledByItsClients(t *testing.T) {
	es := startEdgeSite(t, "files", "generic", "--rate-limit", "100")
	for i := range 80 {
		path := fmt.Sprintf("/generic/files/p/%d/f.txt", i)
		call(t, "PUT", es.e.url+path, es.basic, strings.NewReader("v"), 201)
		call(t, "GET", es.e.url+path, es.basic, nil, 200)
	}
	if out := es.e.out.String(); strings.Contains(out, "Too Many Requests") || strings.Contains(out, "RATE_LIMITED") {
		t.Fatalf("the edge was throttled:\n%s", out)
	}
}
