package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLeaderKilledUnderLoad: four clients upload without pause to the
// three origins of a cluster (round robin, each moving to the next origin
// when one fails) while the leader is killed with kill -9. A new leader
// comes within 3 s; every acknowledged upload is then downloadable, with
// its checksum, from both survivors; a failed attempt got an error (never
// a silent loss) and its retry succeeded. It prints the failover time and
// the counts.
func TestLeaderKilledUnderLoad(t *testing.T) {
	c := startCluster(t)
	call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, bytes.NewReader([]byte(`{"name":"load","format":"generic"}`)), 201)
	leader := -1
	for i, n := range c.nodes {
		for _, m := range c.view.Members {
			if m.ID == c.view.LeaderID && m.RaftAddr == n.raftAddr {
				leader = i
			}
		}
	}
	if leader < 0 {
		t.Fatalf("no leader among %+v", c.view)
	}
	var dead atomic.Int32
	dead.Store(-1)

	type upload struct {
		path string
		sum  [32]byte
	}
	var (
		mu       sync.Mutex
		acked    []upload
		failures atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	client := &http.Client{Timeout: 20 * time.Second}
	put := func(origin int, path string, body []byte) int {
		req, _ := http.NewRequest("PUT", c.procs[origin].url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", c.basic)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for w := range 4 {
		wg.Go(func() {
			origin := w % 3
			for n := 0; !stop.Load(); n++ {
				body := make([]byte, 1024+n%4096)
				_, _ = rand.Read(body)
				path := fmt.Sprintf("/generic/load/c%d/%d/f.bin", w, n)
				for attempt := 0; ; attempt++ {
					if int(dead.Load()) == origin {
						origin = (origin + 1) % 3
					}
					status := put(origin, path, body)
					// 409: an earlier attempt whose answer was lost did
					// commit; the bytes are checked below like any other.
					if status == http.StatusCreated || (status == http.StatusConflict && attempt > 0) {
						mu.Lock()
						acked = append(acked, upload{path, sha256.Sum256(body)})
						mu.Unlock()
						break
					}
					failures.Add(1)
					if attempt == 50 {
						t.Errorf("%s: still failing after %d attempts (last status %d)", path, attempt, status)
						return
					}
					origin = (origin + 1) % 3
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	_ = c.procs[leader].cmd.Process.Kill()
	_ = c.procs[leader].cmd.Wait()
	dead.Store(int32(leader))
	killed := time.Now()
	survivor := c.procs[(leader+1)%3]
	var failover time.Duration
	for failover == 0 {
		if time.Since(killed) > 3*time.Second {
			stop.Store(true)
			wg.Wait()
			t.Fatal("no new leader 3 s after kill -9 of the leader under load")
		}
		if v, ok := viewOf(t, survivor.url, c.tok); ok && v.LeaderID != "" && v.LeaderID != c.view.LeaderID {
			failover = time.Since(killed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()

	var bad []string
	for i, p := range c.procs {
		if i == leader {
			continue
		}
		for _, u := range acked {
			got := get(p.url+u.path, c.basic)
			if sha256.Sum256([]byte(got)) != u.sum {
				bad = append(bad, fmt.Sprintf("%s on %s", u.path, p.url))
			}
		}
	}
	t.Logf("kill -9 of the leader under load: new leader after %v; %d uploads acknowledged (%d before the kill), %d failed attempts (each retried until acknowledged), %d acknowledged uploads missing or wrong on a survivor",
		failover.Round(time.Millisecond), len(acked), before, failures.Load(), len(bad))
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("acknowledged uploads lost or wrong: %v", bad[:min(len(bad), 10)])
	}
	if len(acked) <= before {
		t.Fatalf("no upload was acknowledged after the kill (%d before, %d in all)", before, len(acked))
	}
}
