package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// hookEnv lets deliveries reach the test's receivers on loopback, one at
// a time, so that a slow receiver keeps deliveries pending.
var hookEnv = []string{"WEBHOOK_ALLOW_PRIVATE_NETWORKS=true", "WEBHOOK_CONCURRENCY=1"}

type hookDelivery struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextRetryAt *time.Time `json:"next_retry_at"`
}

func hookDeliveries(t *testing.T, base, tok, hook string) []hookDelivery {
	var out struct {
		Deliveries []hookDelivery `json:"deliveries"`
	}
	_ = json.Unmarshal(call(t, "GET", base+"/api/v1/webhooks/"+hook+"/deliveries?limit=100", tok, nil, 200), &out)
	return out.Deliveries
}

func newHook(t *testing.T, base, tok, url, events string) string {
	var h struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", base+"/api/v1/webhooks", tok,
		strings.NewReader(fmt.Sprintf(`{"url":%q,"events":[%q]}`, url, events)), 201), &h)
	return h.ID
}

// uploadsArrived checks that every upload of paths reached the receiver
// (at least once: receivers tolerate duplicates).
func uploadsArrived(t *testing.T, rcv *clienttest.Receiver, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		seen := map[string]bool{}
		for _, d := range rcv.Got() {
			if d.Event == "artifact.uploaded" && d.Answered/100 == 2 {
				seen[fmt.Sprint(d.Data["version"])] = true
			}
		}
		if len(seen) == n {
			t.Logf("all %d uploads delivered (%d requests)", n, len(rcv.Got()))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d uploads delivered after %s", len(seen), n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookQueueSurvivesKill: an origin killed with kill -9 while
// deliveries are pending (a slow receiver, one at a time) delivers every
// one after it restarts, and a retry scheduled before the kill keeps its
// time and attempt count.
func TestWebhookQueueSurvivesKill(t *testing.T) {
	s := newSite(t)
	s.env = hookEnv
	p := s.start(t)
	first := login(t, p.url, "admin", "initial-pw-123")
	call(t, "PUT", p.url+"/api/v1/users/me", first, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok := login(t, p.url, "admin", "changed-pw-456")
	basic := "Basic " + basicAuth("admin", "changed-pw-456")

	slow := clienttest.NewReceiver(t, "")
	slow.Answer(http.StatusNoContent, 300*time.Millisecond)
	down := clienttest.NewReceiver(t, "")
	down.Answer(http.StatusServiceUnavailable, 0)
	newHook(t, p.url, tok, slow.URL, "artifact.uploaded")
	failing := newHook(t, p.url, tok, down.URL, "repository.created")
	call(t, "POST", p.url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	const n = 20
	for i := range n {
		call(t, "PUT", fmt.Sprintf("%s/generic/files/tool/%d/f.bin", p.url, i), basic, strings.NewReader("x"), 201)
	}
	down.Wait(t, 1, 10*time.Second)
	var before hookDelivery
	waitFor(t, 10*time.Second, "the failed attempt recorded with its retry", func() bool {
		ds := hookDeliveries(t, p.url, tok, failing)
		if len(ds) == 1 && ds[0].NextRetryAt != nil {
			before = ds[0]
		}
		return before.NextRetryAt != nil
	})
	slow.Wait(t, 2, 10*time.Second)
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	t.Logf("killed with %d of %d deliveries made", len(slow.Got()), n)
	if len(slow.Got()) >= n {
		t.Fatal("every delivery was made before the kill: nothing was pending")
	}

	p = s.start(t)
	tok = login(t, p.url, "admin", "changed-pw-456")
	uploadsArrived(t, slow, n, 60*time.Second)
	after := hookDeliveries(t, p.url, tok, failing)
	if len(after) != 1 || after[0].ID != before.ID || after[0].Attempts != 1 || after[0].NextRetryAt == nil || !after[0].NextRetryAt.Equal(*before.NextRetryAt) {
		t.Fatalf("the pending retry after the restart: %+v, before: %+v", after, before)
	}
	if len(down.Got()) != 1 {
		t.Errorf("the retry scheduled a minute ahead was made early: %d attempts", len(down.Got()))
	}
}

// TestWebhooksLeaderKilled: three origins; the leader, which makes the
// deliveries, is killed with kill -9 while they are pending; the new
// leader delivers every one.
func TestWebhooksLeaderKilled(t *testing.T) {
	bin := buildDepot(t)
	c := startClusterOn(t, bin, func(int) site {
		return site{bin: bin, listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t), env: hookEnv}
	})
	leader := leaderIndex(t, c)
	follower := c.procs[(leader+1)%3]
	slow := clienttest.NewReceiver(t, "hook-secret")
	slow.Answer(http.StatusOK, 300*time.Millisecond)
	call(t, "POST", follower.url+"/api/v1/webhooks", c.tok, strings.NewReader(
		fmt.Sprintf(`{"url":%q,"events":["artifact.uploaded"],"secret":"hook-secret"}`, slow.URL)), 201)
	call(t, "POST", follower.url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	const n = 20
	for i := range n {
		call(t, "PUT", fmt.Sprintf("%s/generic/files/tool/%d/f.bin", c.procs[i%3].url, i), c.basic, strings.NewReader("x"), 201)
	}
	slow.Wait(t, 3, 20*time.Second)
	_ = c.procs[leader].cmd.Process.Kill()
	_ = c.procs[leader].cmd.Wait()
	t.Logf("leader killed with %d of %d deliveries made", len(slow.Got()), n)
	if len(slow.Got()) >= n {
		t.Fatal("every delivery was made before the kill: nothing was pending")
	}
	uploadsArrived(t, slow, n, 60*time.Second)
	for _, d := range slow.Got() {
		if !d.SignatureOK {
			t.Errorf("a delivery with a bad signature: %v", d.Header)
		}
	}
}
