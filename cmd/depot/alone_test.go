package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/origin/clienttest"
)

// holdPort keeps addr (TCP, and UDP when udp) busy for the test, as
// another program on the host would. Taken already: someone else holds
// it, which is as good.
func holdPort(t *testing.T, addr string, udp bool) {
	t.Helper()
	if l, err := net.Listen("tcp", addr); err == nil {
		t.Cleanup(func() { l.Close() })
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
	if !udp {
		return
	}
	if c, err := net.ListenPacket("udp", addr); err == nil {
		t.Cleanup(func() { c.Close() })
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
}

// TestOriginAloneNeedsNoClusterPorts: with 8300 and 8301 (the cluster
// defaults, and Consul's) taken, an origin started as the README's quick
// start does (no raft or gossip address, no --join) runs: raft on a
// loopback port of its own choice, no gossip. Started again with
// --raft-addr and --gossip-addr, it is the first member of a cluster
// another origin joins, which reads what was written before. Started once
// more without the addresses it had, it refuses to run alone.
func TestOriginAloneNeedsNoClusterPorts(t *testing.T) {
	holdPort(t, "127.0.0.1:8300", false)
	holdPort(t, "127.0.0.1:8301", true)
	bin := buildDepot(t)
	first := site{bin: bin, dataDir: t.TempDir(), listen: clienttest.FreeAddr(t)}
	p := first.start(t)
	out := p.out.String()
	if !strings.Contains(out, "no gossip (an origin alone") || strings.Contains(out, "raft on 127.0.0.1:8300") {
		t.Fatalf("startup message:\n%s", out)
	}
	tok := login(t, p.url, "admin", "initial-pw-123")
	call(t, "PUT", p.url+"/api/v1/users/me", tok, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok = login(t, p.url, "admin", "changed-pw-456")
	call(t, "POST", p.url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	basic := "Basic " + basicAuth("admin", "changed-pw-456")
	call(t, "PUT", p.url+"/generic/files/tool/1.0/tool.bin", basic, strings.NewReader("written alone"), 201)
	p.stop(t)

	// The first member of a cluster.
	key := "DEPOT_CLUSTER_KEY=" + peerauth.NewKey().Encode()
	first.raftAddr, first.gossipAddr, first.env = clienttest.FreeAddr(t), clienttest.FreeAddr(t), []string{key}
	p = first.start(t)
	if !strings.Contains(p.out.String(), "gossip on "+first.gossipAddr) {
		t.Fatalf("startup message:\n%s", p.out)
	}
	second := site{bin: bin, dataDir: t.TempDir(), listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t),
		gossipAddr: clienttest.FreeAddr(t), env: []string{key}, flags: []string{"--join", first.gossipAddr}}
	q := second.start(t)
	tok = login(t, p.url, "admin", "changed-pw-456")
	waitFor(t, 20*time.Second, "two voters, the first one at its new raft address", func() bool {
		v, ok := viewOf(t, p.url, tok)
		at := 0
		for _, m := range v.Members {
			if m.Healthy && (m.RaftAddr == first.raftAddr || m.RaftAddr == second.raftAddr) {
				at++
			}
		}
		return ok && len(v.Members) == 2 && at == 2
	})
	if got := call(t, "GET", q.url+"/generic/files/tool/1.0/tool.bin", basic, nil, 200); string(got) != "written alone" {
		t.Fatalf("the joined origin reads %q", got)
	}
	call(t, "PUT", q.url+"/generic/files/tool/2.0/tool.bin", basic, strings.NewReader("written in the cluster"), 201)
	// Killed, the second stays a voter (stopped, it would leave the
	// cluster, and the first would be alone again).
	_ = q.cmd.Process.Kill()
	_ = q.cmd.Wait()
	p.stop(t)

	// A member started without its addresses (and without the list of
	// peers that would have given it the cluster defaults) is not alone.
	if err := os.Remove(filepath.Join(first.dataDir, "gossip-peers.json")); err != nil {
		t.Fatal(err)
	}
	first.raftAddr, first.gossipAddr = "", ""
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, first.args()...)
	cmd.Env = append(os.Environ(), key, "JWT_SECRET=crash-test-secret-crash-test-secret-0123")
	got, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(got), "member of a cluster of 2 origins") || !strings.Contains(string(got), "--gossip-addr") {
		t.Fatalf("started alone: %v\n%s", err, got)
	}
}

// TestWrongClusterKeyJoin: an origin joining with another cluster key
// fails at the first answer, saying so, and leaves no data directory;
// the origin it tried says what it saw.
func TestWrongClusterKeyJoin(t *testing.T) {
	bin := buildDepot(t)
	first := site{bin: bin, dataDir: t.TempDir(), listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t),
		gossipAddr: clienttest.FreeAddr(t), env: []string{"DEPOT_CLUSTER_KEY=" + peerauth.NewKey().Encode()}}
	p := first.start(t)
	dir := filepath.Join(t.TempDir(), "data")
	second := site{bin: bin, dataDir: dir, listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(second.args(), "--join", first.gossipAddr)...)
	cmd.Env = append(os.Environ(), "DEPOT_CLUSTER_KEY="+peerauth.NewKey().Encode(), "JWT_SECRET=crash-test-secret-crash-test-secret-0123")
	start := time.Now()
	got, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(got), "DEPOT_CLUSTER_KEY (--cluster-key) differs from the cluster's") {
		t.Fatalf("joined with another key: %v\n%s", err, got)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the wrong key was found after %v", took)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the failed first start left its data directory: %v", err)
	}
	waitFor(t, 5*time.Second, "the joined origin's word on the other key", func() bool {
		return strings.Contains(p.out.String(), "DEPOT_CLUSTER_KEY differs from this one's")
	})
}
