package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFollowerWithoutLeaderDoesNotVouch: with one voter of three dead,
// an origin's health stays 200 and warns peer_unreachable, with a fault
// tolerance of 0. An origin cut off from a quorum (both others killed)
// answers a read of what it has not got 503 with
// Retry-After, not a 404 it cannot vouch for (the write may be committed
// where it cannot see), and says no_leader in its health; what it has it
// still serves.
func TestFollowerWithoutLeaderDoesNotVouch(t *testing.T) {
	c := startCluster(t)
	call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	call(t, "PUT", c.procs[0].url+"/generic/files/tool/1.0/tool.bin", c.basic, strings.NewReader("committed"), 201)
	ids := c.byNodeID()
	survivor := -1
	for id, i := range ids {
		if id != c.view.LeaderID && survivor < 0 {
			survivor = i
		}
	}
	waitFor(t, 10*time.Second, "the survivor to apply the write", func() bool {
		req, _ := http.NewRequest("GET", c.procs[survivor].url+"/generic/files/tool/1.0/tool.bin", nil)
		req.Header.Set("Authorization", c.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	url := c.procs[survivor].url
	killed := 0
	for i, p := range c.procs {
		if i == survivor {
			continue
		}
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if killed++; killed > 1 {
			break
		}
		// One voter of three gone: the cluster serves (200), warns,
		// and can lose no more.
		waitFor(t, 30*time.Second, "health to warn of the dead voter", func() bool {
			var h struct {
				Status         string
				Warnings       []string
				FaultTolerance *int `json:"fault_tolerance"`
			}
			req, _ := http.NewRequest("GET", url+"/api/v1/health", nil)
			req.Header.Set("Authorization", c.tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			_ = json.NewDecoder(resp.Body).Decode(&h)
			return resp.StatusCode == 200 && h.Status == "ok" && slices.Contains(h.Warnings, "peer_unreachable") &&
				h.FaultTolerance != nil && *h.FaultTolerance == 0
		})
	}
	waitFor(t, 10*time.Second, "the survivor to lose its leader", func() bool {
		resp, err := http.Get(url + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	req, _ := http.NewRequest("GET", url+"/generic/files/tool/2.0/tool.bin", nil)
	req.Header.Set("Authorization", c.basic)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a read of what the survivor has not got: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	if got := call(t, "GET", url+"/generic/files/tool/1.0/tool.bin", c.basic, nil, 200); string(got) != "committed" {
		t.Fatalf("what it has: %q", got)
	}
}
