package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMinorityPartition: three origin processes, each in its own network
// namespace, and an edge beside the first. The first origin (the leader)
// is cut off from the other two. The majority elects a leader and takes
// writes; the cut-off origin refuses writes with a clear 503 (and
// Retry-After) within seconds, still answers reads, and its edge still
// serves downloads. After healing, the old leader converges: it holds
// the majority's write and not the one it refused.
func TestMinorityPartition(t *testing.T) {
	lab := newNetLab(t, 3)
	bin := buildDepot(t)
	c := startClusterOn(t, bin, func(i int) site {
		ip := lab.ip(i)
		return site{bin: lab.wrap(bin, i), listen: ip + ":8080", raftAddr: ip + ":8300", gossipAddr: ip + ":8301"}
	})
	o, tok, basic := c.procs, c.tok, c.basic
	var files struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", o[0].url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201), &files)
	call(t, "PUT", o[0].url+"/generic/files/tool/1.0/a.bin", basic, strings.NewReader("before"), 201)

	edgeAddr := lab.ip(0) + ":9000"
	var node struct{ ID, Token string }
	_ = json.Unmarshal(call(t, "POST", o[0].url+"/api/v1/edge-nodes", tok, strings.NewReader(`{"name":"beside-first","url":"http://`+edgeAddr+`"}`), 201), &node)
	call(t, "POST", o[0].url+"/api/v1/edge-nodes/"+node.ID+"/repositories", tok, strings.NewReader(`{"repository_ids":["`+files.ID+`"]}`), 200)
	edge := edgeProc(t, lab.wrap(bin, 0), o[0].url, node.ID, node.Token, edgeAddr, t.TempDir())
	waitFor(t, 20*time.Second, "the edge to serve the file", func() bool { return get(edge.url+"/generic/files/tool/1.0/a.bin", basic) == "before" })
	// A reader whose password the edge has never checked (it waits with
	// her API token): after the cut, the edge must ask the cut-off origin.
	var reader struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", o[0].url+"/api/v1/users", tok, strings.NewReader(`{"username":"reader","email":"reader@example.org","password":"reader-pw-123","role":"user"}`), 201), &reader)
	call(t, "POST", o[0].url+"/api/v1/permissions", tok, strings.NewReader(`{"repository_id":"`+files.ID+`","user_id":"`+reader.ID+`","permissions":["read"]}`), 201)
	var readerTok struct{ Token string }
	_ = json.Unmarshal(call(t, "POST", o[0].url+"/api/v1/users/me/tokens", login(t, o[0].url, "reader", "reader-pw-123"),
		strings.NewReader(`{"name":"ci","scopes":["repository:read"]}`), 201), &readerTok)
	waitFor(t, 20*time.Second, "the edge to hold the reader", func() bool {
		return get(edge.url+"/generic/files/tool/1.0/a.bin", "Basic "+basicAuth("reader", readerTok.Token)) == "before"
	})

	oldLeader := c.view.LeaderID
	lab.cut(0, 1, 2)
	cut := time.Now()
	var newLeader string
	waitFor(t, 20*time.Second, "the majority to elect a leader", func() bool {
		v, ok := viewOf(t, o[1].url, tok)
		newLeader = v.LeaderID
		return ok && newLeader != "" && newLeader != oldLeader
	})
	t.Logf("the majority elected %s %v after the cut", newLeader, time.Since(cut).Round(time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("second origin's output:\n%s", o[1].out)
		}
	}()
	waitFor(t, 20*time.Second, "the majority to take a write", func() bool {
		st := put(o[1].url+"/generic/files/tool/2.0/a.bin", basic, "majority")
		return st == http.StatusCreated
	})

	// The minority: writes refused with a clear error, reads served.
	start := time.Now()
	req, _ := http.NewRequest("PUT", o[0].url+"/generic/files/tool/3.0/a.bin", strings.NewReader("minority"))
	req.Header.Set("Authorization", basic)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("the cut-off origin answered a write in %v: %d %s", took.Round(time.Millisecond), resp.StatusCode, body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "retry") {
		t.Fatalf("a write at the cut-off origin: %d (Retry-After %q) %s, want 503 saying to retry", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if took > 10*time.Second {
		t.Fatalf("the cut-off origin took %v to refuse a write", took)
	}
	if got := get(o[0].url+"/generic/files/tool/1.0/a.bin", basic); got != "before" {
		t.Fatalf("the cut-off origin serves %q", got)
	}
	if got := get(edge.url+"/generic/files/tool/1.0/a.bin", basic); got != "before" {
		t.Fatalf("the edge of the cut-off origin serves %q", got)
	}
	// A password check is a question, not a write: the cut-off origin
	// answers it, so the edge serves a password it never saw before.
	if status, body := getStatus(edge.url+"/generic/files/tool/1.0/a.bin", "Basic "+basicAuth("reader", "reader-pw-123")); status != 200 || body != "before" {
		t.Fatalf("the edge of the cut-off origin, with a password new to it: %d %q\nedge output:\n%s", status, body, edge.out)
	}

	lab.heal(0)
	waitFor(t, 30*time.Second, "the old leader to hold the majority's write", func() bool {
		return get(o[0].url+"/generic/files/tool/2.0/a.bin", basic) == "majority"
	})
	if got := get(o[0].url+"/generic/files/tool/3.0/a.bin", basic); got != "" {
		t.Fatalf("the refused write is there after healing: %q", got)
	}
	waitFor(t, 30*time.Second, "three healthy members again", func() bool {
		v, ok := viewOf(t, o[0].url, tok)
		healthy := 0
		for _, m := range v.Members {
			if m.Healthy {
				healthy++
			}
		}
		return ok && healthy == 3
	})
}

// put is a PUT's status, 0 when it did not get an answer.
func put(url, auth, body string) int {
	req, _ := http.NewRequest("PUT", url, strings.NewReader(body))
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
