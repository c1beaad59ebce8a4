package origin_test

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// TestRaftPortRefusesPeersWithoutTheKey plays an attacker who can reach
// the raft port: it asks the node for its term and last index with a
// stale heartbeat, then appends a committed UserCreate for an admin of its
// own. A node that lets anyone speak raft answers both and creates the user.
func TestRaftPortRefusesPeersWithoutTheKey(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	health := e.Do("GET", "/api/v1/health", e.Admin, nil).Want(200).Map()
	target, _ := health["leader_addr"].(string)
	if target == "" {
		t.Fatalf("no raft address in %v", health)
	}
	applied := health["last_applied"]

	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: tr.EncodePeer("intruder", tr.LocalAddr())}
	var probe raft.AppendEntriesResponse
	perr := tr.AppendEntries("origin", raft.ServerAddress(target), &raft.AppendEntriesRequest{RPCHeader: hdr}, &probe)

	hash, err := auth.HashPassword("intruder-Password-1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	cmd, err := meta.Encode(&meta.UserCreate{User: meta.User{ID: auth.NewID(), Username: "intruder", Email: "intruder@example.com",
		Role: meta.RoleAdmin, PasswordHash: hash, Source: "local", CreatedAt: now, UpdatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	next := probe.LastLog + 1
	var resp raft.AppendEntriesResponse
	ferr := tr.AppendEntries("origin", raft.ServerAddress(target), &raft.AppendEntriesRequest{
		RPCHeader: hdr, Term: probe.Term, PrevLogEntry: probe.LastLog, PrevLogTerm: probe.Term,
		Entries:           []*raft.Log{{Index: next, Term: probe.Term, Type: raft.LogCommand, Data: cmd}},
		LeaderCommitIndex: next,
	}, &resp)
	if perr == nil || ferr == nil {
		t.Errorf("the raft port answered a peer without the cluster key: probe err %v (term %d, last %d), forged entry err %v (success %v)",
			perr, probe.Term, probe.LastLog, ferr, resp.Success)
	}

	var users struct {
		Users []struct {
			Username string `json:"username"`
		} `json:"users"`
	}
	e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&users)
	for _, u := range users.Users {
		if u.Username == "intruder" {
			t.Fatal("the forged UserCreate was applied: user 'intruder' exists")
		}
	}
	if after := e.Do("GET", "/api/v1/health", e.Admin, nil).Want(200).Map()["last_applied"]; after != applied {
		t.Fatalf("last_applied moved from %v to %v", applied, after)
	}
}

// start runs origin.New on cfg, reporting startup output and logs in out.
func start(t *testing.T, cfg origin.Config, out *clienttest.Buffer) (*origin.Origin, error) {
	t.Helper()
	cfg.RaftTimeout = 100 * time.Millisecond
	cfg.JWTSecret = "test-secret-test-secret-test-secret-0123456789"
	cfg.AdminPassword = origintest.InitialAdminPassword
	o, err := origin.New(t.Context(), cfg, slog.New(slog.NewTextHandler(out, nil)), out)
	if err == nil {
		t.Cleanup(o.Close)
	}
	return o, err
}

func TestClusterKeyConfig(t *testing.T) {
	base := func() origin.Config {
		c := origin.DefaultConfig()
		c.DataDir = t.TempDir()
		c.RaftAddr = "127.0.0.1:0"
		c.GossipAddr = "127.0.0.1:0" // never a fixed port (8301 is also Consul's)
		return c
	}
	t.Run("bad key", func(t *testing.T) {
		for _, k := range []string{"too-short", base64.StdEncoding.EncodeToString(make([]byte, 16)),
			base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 33))} {
			cfg := base()
			cfg.ClusterKey = k
			var out clienttest.Buffer
			_, err := start(t, cfg, &out)
			if err == nil || !strings.Contains(err.Error(), "DEPOT_CLUSTER_KEY") || strings.Contains(err.Error(), k) {
				t.Errorf("key %q: err %v", k, err)
			}
		}
	})
	t.Run("reachable raft address needs a key", func(t *testing.T) {
		for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:8300", "raft.example.com:8300"} {
			cfg := base()
			cfg.RaftAddr = addr
			var out clienttest.Buffer
			_, err := start(t, cfg, &out)
			if err == nil || !strings.Contains(err.Error(), "DEPOT_CLUSTER_KEY") || !strings.Contains(err.Error(), "depot keygen") {
				t.Errorf("raft address %s without a key: err %v", addr, err)
			}
		}
	})
	t.Run("loopback node keeps a generated key", func(t *testing.T) {
		cfg := base()
		var out clienttest.Buffer
		o, err := start(t, cfg, &out)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(cfg.DataDir, "cluster-key")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("cluster-key mode %v, want 0600", fi.Mode().Perm())
		}
		kept, _ := os.ReadFile(path)
		if _, err := peerauth.ParseKey(string(kept)); err != nil {
			t.Fatalf("kept key: %v", err)
		}
		if strings.Contains(out.String(), strings.TrimSpace(string(kept))) {
			t.Error("the cluster key was printed or logged")
		}
		o.Close()
		if _, err := start(t, cfg, &out); err != nil {
			t.Fatalf("restart: %v", err)
		}
		if again, _ := os.ReadFile(path); !bytes.Equal(again, kept) {
			t.Error("restart replaced the kept key")
		}
	})
	t.Run("a former cluster member needs its key", func(t *testing.T) {
		cfg := base()
		if err := os.WriteFile(filepath.Join(cfg.DataDir, "gossip-peers.json"), []byte(`["127.0.0.1:8311","127.0.0.1:8321"]`), 0o600); err != nil {
			t.Fatal(err)
		}
		var out clienttest.Buffer
		_, err := start(t, cfg, &out)
		if err == nil || !strings.Contains(err.Error(), "DEPOT_CLUSTER_KEY") || !strings.Contains(err.Error(), "2 other origin(s)") {
			t.Fatalf("restart of a cluster member without its key: err %v", err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "cluster-key")); !os.IsNotExist(err) {
			t.Errorf("a key was made: %v", err)
		}
	})
	t.Run("a given key is not written to disk", func(t *testing.T) {
		cfg := base()
		cfg.ClusterKey = peerauth.NewKey().Encode()
		var out clienttest.Buffer
		if _, err := start(t, cfg, &out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "cluster-key")); !os.IsNotExist(err) {
			t.Errorf("cluster-key file: %v", err)
		}
		if strings.Contains(out.String(), cfg.ClusterKey) {
			t.Error("the cluster key was printed or logged")
		}
	})
}
