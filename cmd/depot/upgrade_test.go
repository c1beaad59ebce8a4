package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/clustertest"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/shared/meta"
)

var (
	legacyOnce sync.Once
	legacyBin  string
	legacyErr  []byte
)

// legacyDepot builds the binary that stands for an older Depot: it lacks
// one command (creating a webhook), as an older build lacks the commands
// added after it.
func legacyDepot(t *testing.T) string {
	t.Helper()
	buildDepot(t) // skipped under -short like the others
	legacyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "depot-legacy-")
		if err != nil {
			legacyErr = []byte(err.Error())
			return
		}
		bin := filepath.Join(dir, "depot")
		out, err := exec.Command("go", "build", "-tags", "depot_legacy_build", "-o", bin, "github.com/depot-registry/depot/cmd/depot").CombinedOutput()
		if err != nil {
			legacyErr = append(out, err.Error()...)
			return
		}
		legacyBin = bin
	})
	if legacyBin == "" {
		t.Fatalf("building the legacy depot: %s", legacyErr)
	}
	return legacyBin
}

// TestRollingUpgrade: three origins of an older build (one that does not
// know the command that creates a webhook) and an edge; the origins are
// upgraded one at a time. While one of them still runs the older build,
// creating a webhook is refused everywhere with a 503 that says to
// upgrade (nothing committed, nothing panics) and every other write goes
// on; once the last is upgraded it works. The edge follows throughout,
// and the three stores end identical.
func TestRollingUpgrade(t *testing.T) {
	bin, old := buildDepot(t), legacyDepot(t)
	// Downloads are added to the history every 100 ms, so none waits
	// when the stores are compared.
	c := startClusterOn(t, old, func(int) site {
		return site{bin: old, listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t),
			env: []string{"DEPOT_DOWNLOADS_REPORT=100ms"}}
	})
	hook := `{"url":"https://hooks.example.invalid/depot","events":["artifact.uploaded"]}`
	createHook := func(i int) (int, string) {
		req, _ := http.NewRequest("POST", c.procs[i].url+"/api/v1/webhooks", strings.NewReader(hook))
		req.Header.Set("Authorization", c.tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var files struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201), &files)
	call(t, "PUT", c.procs[0].url+"/generic/files/tool/1.0/a.bin", c.basic, strings.NewReader("one"), 201)

	// An edge (of the newer build) follows the cluster throughout.
	var node struct{ ID, Token string }
	edgeListen := clienttest.FreeAddr(t)
	_ = json.Unmarshal(call(t, "POST", c.procs[0].url+"/api/v1/edge-nodes", c.tok, strings.NewReader(`{"name":"near","url":"http://`+edgeListen+`"}`), 201), &node)
	call(t, "POST", c.procs[0].url+"/api/v1/edge-nodes/"+node.ID+"/repositories", c.tok, strings.NewReader(`{"repository_ids":["`+files.ID+`"]}`), 200)
	edge := edgeProc(t, bin, c.procs[0].url+","+c.procs[1].url+","+c.procs[2].url, node.ID, node.Token, edgeListen, t.TempDir())

	healthy := func() bool {
		v, ok := viewOf(t, c.procs[0].url, c.tok)
		n := 0
		for _, m := range v.Members {
			if m.Healthy && (m.Role == "leader" || m.Role == "follower") {
				n++
			}
		}
		return ok && n == 3
	}
	upgrade := func(i int) {
		t.Helper()
		c.procs[i].stop(t)
		c.nodes[i].bin, c.nodes[i].flags = bin, nil // it remembers its peers
		c.procs[i] = c.nodes[i].start(t)
		waitFor(t, 30*time.Second, "the upgraded origin back in the cluster", healthy)
	}
	upgrade(1)
	upgrade(2)

	// Two of three upgraded: the command the third does not know is
	// refused wherever it is asked, whichever origin leads.
	for i := range c.procs {
		status, body := createHook(i)
		if status != http.StatusServiceUnavailable || !strings.Contains(body, "older Depot") {
			t.Fatalf("a webhook asked at origin %d mid-upgrade: %d %s", i, status, body)
		}
	}
	// Everything else goes on, at every origin.
	for i, p := range c.procs {
		call(t, "PUT", p.url+"/generic/files/tool/2."+string(rune('0'+i))+"/b.bin", c.basic, strings.NewReader("mid-upgrade"), 201)
	}

	upgrade(0)
	var created bool
	var hookID string
	waitFor(t, 20*time.Second, "a webhook once every origin is upgraded", func() bool {
		status, body := createHook(1)
		if status == http.StatusCreated {
			created = true
			var h struct{ ID string }
			_ = json.Unmarshal([]byte(body), &h)
			hookID = h.ID
		} else if status != http.StatusServiceUnavailable {
			t.Fatalf("a webhook after the upgrade: %d %s", status, body)
		}
		return created
	})
	call(t, "PUT", c.procs[2].url+"/generic/files/tool/3.0/c.bin", c.basic, strings.NewReader("after"), 201)

	// The edge has followed: it serves what was written last.
	waitFor(t, 20*time.Second, "the edge to serve the last upload", func() bool {
		return get(edge.url+"/generic/files/tool/3.0/c.bin", c.basic) == "after"
	})

	// Quiesce before comparing: nothing may commit once the first origin
	// stops (a store that missed the last entries is behind, not
	// diverged). The edge's heartbeats and the webhook's delivery attempts
	// are what commits on its own; with both gone, wait until the three
	// origins have applied the same index and it holds still.
	edge.stop(t)
	call(t, "DELETE", c.procs[0].url+"/api/v1/webhooks/"+hookID, c.tok, nil, 204)
	var steady int
	var last string
	waitFor(t, 30*time.Second, "the three origins to apply the same last index", func() bool {
		var idx []string
		for _, p := range c.procs {
			idx = append(idx, appliedIndex(p.url))
		}
		same := idx[0] != "" && idx[0] == idx[1] && idx[1] == idx[2]
		if same && idx[0] == last {
			steady++
		} else {
			steady = 0
		}
		last = idx[0]
		return steady >= 10
	})

	// Nothing panicked; the three stores are the same.
	for i, p := range c.procs {
		p.stop(t)
		if strings.Contains(p.out.String(), "panic") {
			t.Errorf("origin %d panicked:\n%s", i, p.out)
		}
	}
	var digests []string
	for _, n := range c.nodes {
		s, err := meta.Open(filepath.Join(n.dataDir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := clustertest.StateDigest(s)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] || digests[1] != digests[2] {
		t.Fatalf("the stores differ after the upgrade: %v", digests)
	}
}

// appliedIndex is the last log index an origin reports applied to its
// store (its metrics), or "" if it does not answer.
func appliedIndex(base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "depot_raft_applied_index "); ok {
			return v
		}
	}
	return ""
}
