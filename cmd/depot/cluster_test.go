package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/clienttest"
)

// clusterView is GET /api/v1/admin/cluster's answer.
type clusterView = app.ClusterView

func viewOf(t *testing.T, base, tok string) (clusterView, bool) {
	req, _ := http.NewRequest("GET", base+"/api/v1/admin/cluster", nil)
	req.Header.Set("Authorization", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return clusterView{}, false
	}
	defer resp.Body.Close()
	var v clusterView
	return v, resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&v) == nil
}

// cluster is three origin processes that formed a cluster: the first
// alone, the others with --join.
type cluster struct {
	bin        string
	nodes      [3]site
	procs      [3]*proc
	tok, basic string // the admin's session and Basic credentials
	view       clusterView
}

// byNodeID maps the members' node ids to their index in c.nodes.
func (c *cluster) byNodeID() map[string]int {
	ids := map[string]int{}
	for _, m := range c.view.Members {
		for i, n := range c.nodes {
			if m.RaftAddr == n.raftAddr {
				ids[m.ID] = i
			}
		}
	}
	return ids
}

// hasBlob reports whether origin i holds the blob in its store.
func (c *cluster) hasBlob(i int, digest string) bool {
	hx := strings.TrimPrefix(digest, "sha256:")
	_, err := os.Stat(filepath.Join(c.nodes[i].dataDir, "blobs", "sha256", hx[:2], hx))
	return err == nil
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := buildDepot(t)
	return startClusterOn(t, bin, func(int) site {
		return site{bin: bin, listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t)}
	})
}

// startClusterOn starts the cluster on the sites place gives (binary and
// addresses; the data directories and the cluster key are added).
func startClusterOn(t *testing.T, bin string, place func(i int) site) *cluster {
	t.Helper()
	c := &cluster{bin: bin}
	key := peerauth.NewKey().Encode()
	for i := range c.nodes {
		c.nodes[i] = place(i)
		c.nodes[i].dataDir = t.TempDir()
		c.nodes[i].env = append(c.nodes[i].env, "DEPOT_CLUSTER_KEY="+key)
	}
	c.procs[0] = c.nodes[0].start(t)
	for i := 1; i < 3; i++ {
		c.nodes[i].flags = []string{"--join", c.nodes[0].gossipAddr}
		c.procs[i] = c.nodes[i].start(t)
	}
	first := login(t, c.procs[0].url, "admin", "initial-pw-123")
	call(t, "PUT", c.procs[0].url+"/api/v1/users/me", first, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	c.tok = login(t, c.procs[0].url, "admin", "changed-pw-456")
	c.basic = "Basic " + basicAuth("admin", "changed-pw-456")
	waitFor(t, 20*time.Second, "three healthy members, one leader", func() bool {
		var ok bool
		c.view, ok = viewOf(t, c.procs[0].url, c.tok)
		leaders, healthy, named := 0, 0, 0
		for _, m := range c.view.Members {
			if m.Role == "leader" {
				leaders++
			}
			if m.Healthy && (m.Role == "leader" || m.Role == "follower") {
				healthy++
			}
			if m.APIURL != "" {
				named++
			}
		}
		return ok && len(c.view.Members) == 3 && leaders == 1 && healthy == 3 && named == 3
	})
	return c
}

// TestClusterFormsAndFailsOver: three origin processes on loopback. The
// first forms a cluster alone; the others join it with --join and the
// leader makes them voters; GET /admin/cluster lists three healthy
// members and one leader, what the leader commits is read on the
// followers (bytes fetched from the peer that has them), and a write at a
// follower goes through the leader. kill -9 of the leader: another origin leads within 3 s and
// reports the old leader unhealthy; the killed origin restarts without
// --join (it remembers its peers) and catches up, fetching by itself the
// blob uploaded while it was down; an upload it
// acknowledges survives its kill -9 right after (the blob is on a quorum).
// An edge given only the first origin learns the others and goes on when
// that one dies. depot cluster remove-peer takes a dead origin out.
func TestClusterFormsAndFailsOver(t *testing.T) {
	c := startCluster(t)
	bin, nodes, procs, tok, basic, v := c.bin, c.nodes, c.procs, c.tok, c.basic, c.view
	ids := c.byNodeID()
	for _, m := range v.Members {
		if i, ok := ids[m.ID]; ok && m.APIURL != procs[i].url {
			t.Errorf("member %s: api_url %q, want %q", m.ID, m.APIURL, procs[i].url)
		}
	}
	if len(ids) != 3 || ids[v.LeaderID] != 0 {
		t.Fatalf("cluster view %+v: want the three nodes, the first leading", v)
	}

	// A write at the leader is read on every follower: the metadata
	// through raft, the bytes fetched from the leader on first download.
	var files struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", procs[0].url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201), &files)
	call(t, "PUT", procs[0].url+"/generic/files/tool/1.0/a.bin", basic, strings.NewReader("before"), 201)

	// An edge given the first origin alone learns the others from its
	// heartbeats.
	var node struct{ ID, Token string }
	edgeListen := clienttest.FreeAddr(t)
	_ = json.Unmarshal(call(t, "POST", procs[0].url+"/api/v1/edge-nodes", tok, strings.NewReader(`{"name":"near","url":"http://`+edgeListen+`"}`), 201), &node)
	call(t, "POST", procs[0].url+"/api/v1/edge-nodes/"+node.ID+"/repositories", tok, strings.NewReader(`{"repository_ids":["`+files.ID+`"]}`), 200)
	edge := edgeProc(t, bin, procs[0].url, node.ID, node.Token, edgeListen, t.TempDir())
	edgeOrigins := func() (int, []string) {
		req, _ := http.NewRequest("GET", edge.url+"/api/v1/health", nil)
		req.Header.Set("Authorization", tok) // the node's details are for signed-in callers
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var h struct {
			Node struct{ Origins []string } `json:"node"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return resp.StatusCode, h.Node.Origins
	}
	waitFor(t, 20*time.Second, "the edge to learn the three origins", func() bool { _, o := edgeOrigins(); return len(o) == 3 })
	for _, p := range procs[1:] {
		waitFor(t, 10*time.Second, "the write on a follower", func() bool { return hasVersion(p.url, tok, "1.0") })
		if got := get(p.url+"/generic/files/tool/1.0/a.bin", basic); got != "before" {
			t.Fatalf("a follower serves the leader's upload as %q", got)
		}
	}

	// A write at a follower is decided there and committed through the
	// leader: a login, a repository, an upload; the follower reads its own
	// write at once, the leader has it too.
	ftok := login(t, procs[2].url, "admin", "changed-pw-456")
	call(t, "POST", procs[2].url+"/api/v1/repositories", ftok, strings.NewReader(`{"name":"more","format":"generic"}`), 201)
	call(t, "PUT", procs[2].url+"/generic/files/tool/1.5/c.bin", basic, strings.NewReader("at a follower"), 201)
	if got := get(procs[2].url+"/generic/files/tool/1.5/c.bin", basic); got != "at a follower" {
		t.Fatalf("the follower reads back its own upload as %q", got)
	}
	if !hasVersion(procs[2].url, ftok, "1.5") || !hasVersion(procs[0].url, tok, "1.5") {
		t.Fatal("a write at a follower is missing on the follower or the leader")
	}
	if got := get(procs[0].url+"/generic/files/tool/1.5/c.bin", basic); got != "at a follower" {
		t.Fatalf("the leader serves a follower's upload as %q", got)
	}
	// A conflict decided at a follower comes back as one.
	call(t, "POST", procs[1].url+"/api/v1/repositories", ftok, strings.NewReader(`{"name":"more","format":"generic"}`), 409)

	// A setting changed at one follower applies on the other, no restart.
	call(t, "PUT", procs[1].url+"/api/v1/admin/settings", ftok, strings.NewReader(`{"repositories.default_public": true}`), 200)
	waitFor(t, 10*time.Second, "the setting on the other follower", func() bool {
		return strings.Contains(string(call(t, "GET", procs[2].url+"/api/v1/admin/settings", ftok, nil, 200)), `"repositories.default_public":true`)
	})
	var open struct{ Public bool }
	_ = json.Unmarshal(call(t, "POST", procs[2].url+"/api/v1/repositories", ftok, strings.NewReader(`{"name":"open","format":"generic"}`), 201), &open)
	if !open.Public {
		t.Error("a repository made at another origin without saying is not public after the setting changed")
	}

	// kill -9 of the leader.
	_ = procs[0].cmd.Process.Kill()
	_ = procs[0].cmd.Wait()
	killed := time.Now()
	var newLeader string
	for newLeader == "" || newLeader == v.LeaderID {
		if time.Since(killed) > 3*time.Second {
			t.Fatalf("no new leader 3 s after the leader was killed")
		}
		time.Sleep(20 * time.Millisecond)
		if w, ok := viewOf(t, procs[1].url, tok); ok {
			newLeader = w.LeaderID
		}
	}
	t.Logf("new leader %s %v after kill -9 of the leader", newLeader, time.Since(killed).Round(time.Millisecond))
	lead := procs[ids[newLeader]]
	waitFor(t, 30*time.Second, "the killed leader to be reported unhealthy", func() bool {
		w, _ := viewOf(t, lead.url, tok)
		for _, m := range w.Members {
			if m.ID == v.LeaderID {
				return !m.Healthy && m.Gossip == "dead"
			}
		}
		return false
	})
	call(t, "PUT", lead.url+"/generic/files/tool/2.0/b.bin", basic, strings.NewReader("after"), 201)

	// The edge's own origin is dead: it goes on with the others it
	// learned, reads and writes.
	waitFor(t, 20*time.Second, "the edge to reach a live origin", func() bool { st, _ := edgeOrigins(); return st == 200 })
	call(t, "PUT", edge.url+"/generic/files/tool/2.5/e.bin", basic, strings.NewReader("through the edge"), 201)
	if got := get(edge.url+"/generic/files/tool/2.5/e.bin", basic); got != "through the edge" {
		t.Fatalf("the edge, its origin dead, serves its write as %q", got)
	}

	// The killed node comes back by itself and catches up.
	nodes[0].flags = nil
	procs[0] = nodes[0].start(t)
	waitFor(t, 20*time.Second, "the restarted node to catch up", func() bool { return hasVersion(procs[0].url, tok, "2.0") })
	// It also fetches, by itself, the blob uploaded while it was down.
	sum := sha256.Sum256([]byte("after"))
	waitFor(t, 30*time.Second, "the restarted origin to repair the blob it missed", func() bool {
		return c.hasBlob(0, "sha256:"+hex.EncodeToString(sum[:]))
	})
	waitFor(t, 20*time.Second, "three healthy members again", func() bool {
		w, ok := viewOf(t, lead.url, tok)
		healthy := 0
		for _, m := range w.Members {
			if m.Healthy {
				healthy++
			}
		}
		return ok && len(w.Members) == 3 && healthy == 3
	})
	// Its repair shows as its sync: in its health, and in the cluster
	// listing of another origin (told by gossip).
	var health struct {
		Sync struct {
			State     string `json:"state"`
			Operation string `json:"operation"`
			Done      int64  `json:"done"`
			Total     int64  `json:"total"`
			Bytes     int64  `json:"bytes"`
		} `json:"sync"`
	}
	if err := json.Unmarshal(call(t, "GET", procs[0].url+"/api/v1/health", tok, nil, 200), &health); err != nil {
		t.Fatal(err)
	}
	if s := health.Sync; s.Operation != "blob_repair" || s.Done < 1 || s.Total < s.Done || s.Bytes < int64(len("after")) {
		t.Errorf("the repaired origin's health says sync %+v, want its repair pass (at least 1 blob)", s)
	}
	waitFor(t, 10*time.Second, "the leader to list the repaired origin's sync", func() bool {
		w, _ := viewOf(t, lead.url, tok)
		for _, m := range w.Members {
			if m.ID == v.LeaderID {
				return m.Sync != nil && m.Sync.Operation == "blob_repair" && m.Sync.State == "synced" && m.Sync.Done >= 1
			}
		}
		return false
	})

	// An acknowledged upload is on a quorum of the origins: the origin
	// that took it is killed the moment it answered, and the others serve
	// the bytes.
	call(t, "PUT", procs[0].url+"/generic/files/tool/3.0/z.bin", basic, strings.NewReader("durable"), 201)
	_ = procs[0].cmd.Process.Kill()
	_ = procs[0].cmd.Wait()
	if got := get(lead.url+"/generic/files/tool/3.0/z.bin", basic); got != "durable" {
		t.Fatalf("an upload acknowledged by an origin killed right after: %q at the leader", got)
	}

	// depot cluster remove-peer takes the dead origin out for good, and
	// refuses a live one.
	removePeer := func(id string) (string, error) {
		out, err := exec.Command(bin, "cluster", "remove-peer", "--origin", lead.url, "--token", strings.TrimPrefix(tok, "Bearer "), id).CombinedOutput()
		return string(out), err
	}
	deadID, liveID := "", ""
	for id, i := range ids {
		switch {
		case i == 0:
			deadID = id
		case id != newLeader:
			liveID = id
		}
	}
	if out, err := removePeer(liveID); err == nil || !strings.Contains(out, "alive") {
		t.Fatalf("remove-peer of a live origin: %v %s", err, out)
	}
	if out, err := removePeer(newLeader); err == nil || !strings.Contains(out, newLeader+" is alive: stop it") {
		t.Fatalf("remove-peer of the origin asked: %v %s", err, out)
	}
	waitFor(t, 30*time.Second, "the killed origin to be found dead", func() bool {
		w, _ := viewOf(t, lead.url, tok)
		for _, m := range w.Members {
			if m.ID == deadID {
				return m.Gossip == "dead"
			}
		}
		return false
	})
	if out, err := removePeer(deadID); err != nil || !strings.Contains(out, "removed "+deadID) {
		t.Fatalf("remove-peer of the dead origin: %v %s", err, out)
	}
	if w, _ := viewOf(t, lead.url, tok); len(w.Members) != 2 {
		t.Fatalf("after remove-peer the cluster lists %+v", w.Members)
	}
}

// hasVersion reports whether the node at base lists version v of the
// package tool.
func hasVersion(base, tok, v string) bool {
	req, _ := http.NewRequest("GET", base+"/api/v1/packages/tool/versions", nil)
	req.Header.Set("Authorization", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return false
	}
	for _, x := range out.Versions {
		if x.Version == v {
			return true
		}
	}
	return false
}

// get is a GET's body, "" unless 200.
func get(url, auth string) string {
	status, body := getStatus(url, auth)
	if status != 200 {
		return ""
	}
	return body
}

// getStatus is a GET's status and body (0 when it got no whole answer).
func getStatus(url, auth string) (int, string) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}
