package origin

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHealthNoLeader: once raft has no leader (here the node's raft is
// stopped, as when the leader steps down because its log cannot be
// written), GET /health answers 503 degraded with reason no_leader; it
// answered 200 "ok".
func TestHealthNoLeader(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.GossipAddr = "127.0.0.1:0" // never a fixed port (8301 is also Consul's)
	cfg.RaftTimeout = 50 * time.Millisecond
	cfg.AdminPassword = "initial-admin-pw"
	cfg.JWTSecret = strings.Repeat("s", 32)
	cfg.MinFreeBytes = 0 // the host's free space is not under test
	o, err := New(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	srv := httptest.NewServer(o.Handler())
	defer srv.Close()
	get := func() (int, map[string]any) {
		resp, err := http.Get(srv.URL + "/api/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := get(); code != 200 || body["status"] != "ok" {
		t.Fatalf("health of a leader: %d %v", code, body)
	}

	if err := o.node.Raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	code, body := get()
	reasons, _ := body["reasons"].([]any)
	if code != http.StatusServiceUnavailable || body["status"] != "degraded" || !slices.Equal(reasons, []any{reasonNoLeader}) {
		t.Fatalf("health without a leader: %d %v", code, body)
	}
}
