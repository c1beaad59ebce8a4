// Package clustertest runs a cluster of origins' metadata in one process:
// every node a real metadata store behind the real FSM, a raft peer on
// loopback speaking the authenticated transport, and the forwarding
// committer, so a write decided on any node is committed through the
// leader. The links between the nodes go through a Network that tests
// cut and heal to partition the cluster. hashicorp/raft's own testing
// harness is the model: make a cluster, break it, check that every node
// ends with the same state.
package clustertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/leader"
	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Timeout of heartbeats and elections: short, so failovers in tests take
// a fraction of a second.
const Timeout = 150 * time.Millisecond

// Node is one member.
type Node struct {
	ID    string
	Store *meta.Store
	Raft  *raftnode.Node
	// Commit decides nothing: it commits a command through the leader,
	// from wherever it is called, waiting out an election.
	Commit *leader.Forwarding
	// Peers calls the other nodes' RPC over the node's authenticated
	// connections (through Net, like raft's).
	Peers *peerrpc.Client
	dir   string
	peers *http.Server
	blobs atomic.Pointer[http.Handler] // the blob routes, once ServeBlobs set them
}

// Cluster is the nodes and the network between them.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
	Net   *Network
	key   peerauth.Key
	fsm   func(*meta.Store) raft.FSM
}

// New starts n nodes running the FSM newFSM makes (the origin's) and
// waits until they are one cluster with a leader.
func New(t testing.TB, n int, newFSM func(*meta.Store) raft.FSM) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Net: NewNetwork(), key: peerauth.NewKey(), fsm: newFSM}
	for i := range n {
		node := c.start(fmt.Sprintf("node%d", i), t.TempDir(), "127.0.0.1:0", i == 0)
		c.Nodes = append(c.Nodes, node)
	}
	lead := c.Leader()
	for _, node := range c.Nodes[1:] {
		if err := lead.Raft.AddVoter(node.ID, node.Raft.Addr(), 10*time.Second); err != nil {
			t.Fatalf("add %s: %v", node.ID, err)
		}
	}
	c.WaitConverged()
	return c
}

func (c *Cluster) start(id, dir, bind string, bootstrap bool) *Node {
	c.t.Helper()
	store, err := meta.Open(filepath.Join(dir, "meta.db"))
	if err != nil {
		c.t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rn, err := raftnode.New(raftnode.Config{NodeID: id, BindAddr: bind, Dir: filepath.Join(dir, "raft"), Bootstrap: bootstrap,
		Key: c.key, Logger: log, Dial: c.Net.dialer(id), HeartbeatTimeout: Timeout, ElectionTimeout: Timeout}, c.fsm(store))
	if err != nil {
		store.Close()
		c.t.Fatal(err)
	}
	c.Net.place(id, rn.Addr())
	node := &Node{ID: id, Store: store, Raft: rn, dir: dir}
	node.Peers = leader.PeerClient(rn)
	node.Commit = leader.NewForwarding(rn, store, 10*Timeout, node.Peers)
	mux := http.NewServeMux()
	mux.Handle("/", peerrpc.Handler(peerrpc.Services{Leader: leader.Serve(rn, store.LastApplied)}))
	blobRoutes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := node.blobs.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
	mux.Handle(peerrpc.BlobsPath, blobRoutes)
	mux.Handle(peerrpc.UploadsPath, blobRoutes)
	node.peers = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = node.peers.Serve(rn.RPCListener()) }()
	c.t.Cleanup(func() { node.stop() })
	return node
}

// ServeBlobs makes the node answer the blob and upload routes of the
// peers' RPC with b and u (until then it answers them 404, as a node
// that serves no blobs), replacing what an earlier call set.
func (n *Node) ServeBlobs(b peerrpc.Blobs, u peerrpc.Uploads) {
	h := peerrpc.Handler(peerrpc.Services{Blobs: b, Uploads: u})
	n.blobs.Store(&h)
}

func (n *Node) stop() {
	if n.Raft == nil {
		return
	}
	_ = n.peers.Close()
	_ = n.Raft.Shutdown()
	_ = n.Store.Close()
	n.Raft = nil
}

// Stop shuts node i down as a crash would leave it: its data stays.
func (c *Cluster) Stop(i int) { c.Nodes[i].stop() }

// Restart starts stopped node i again on its data and address.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	old := c.Nodes[i]
	c.Nodes[i] = c.start(old.ID, old.dir, c.Net.addr(old.ID), false)
}

// Running are the nodes not stopped.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Raft != nil {
			out = append(out, n)
		}
	}
	return out
}

// Leader waits (10 s at most) until one running node leads and every
// other running node that can reach it agrees, and returns it.
func (c *Cluster) Leader() *Node {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.Running() {
			if n.Raft.IsLeader() {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10 s")
	return nil
}

// Partition cuts every link between nodes of different groups (indexes
// into Nodes); a node in no group is cut off from all.
func (c *Cluster) Partition(groups ...[]int) {
	side := map[string]int{}
	for g, members := range groups {
		for _, i := range members {
			side[c.Nodes[i].ID] = g + 1
		}
	}
	c.Net.split(func(a, b string) bool { return side[a] == 0 || side[a] != side[b] })
}

// Heal restores every link.
func (c *Cluster) Heal() { c.Net.split(func(a, b string) bool { return false }) }

// WaitConverged waits (20 s at most) until every running node has applied
// the same log and holds the same state, and returns that state's digest.
func (c *Cluster) WaitConverged() string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		nodes := c.Running()
		digests := map[string]bool{}
		var first string
		for _, n := range nodes {
			d, err := StateDigest(n.Store)
			if err != nil {
				c.t.Fatal(err)
			}
			digests[d] = true
			first = d
		}
		// Raft's applied index counts its own entries (configuration,
		// no-ops) too, which the store never sees.
		index := nodes[0].Raft.Raft.AppliedIndex()
		same := len(digests) == 1
		for _, n := range nodes {
			r := n.Raft.Raft
			same = same && r.AppliedIndex() == index && r.AppliedIndex() >= r.CommitIndex()
		}
		if same {
			return first
		}
		last = fmt.Sprintf("%d different states", len(digests))
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("the nodes did not converge in 20 s: %s", last)
	return ""
}

// StateDigest is a digest of everything store holds: the records of its
// snapshot stream, which are written in key order, so equal stores give
// equal digests.
func StateDigest(store *meta.Store) (string, error) {
	snap, err := store.BeginSnapshot()
	if err != nil {
		return "", err
	}
	defer snap.Release()
	h := sha256.New()
	if _, err := snap.WriteTo(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Network is the links between the nodes: a connection between two nodes
// goes through it, and a cut link refuses new connections and breaks
// those open.
type Network struct {
	mu    sync.Mutex
	addrs map[string]string // node id -> raft address
	ids   map[string]string // raft address -> node id
	cut   func(a, b string) bool
	conns map[*link]struct{}
}

// NewNetwork is a network with every link up.
func NewNetwork() *Network {
	return &Network{addrs: map[string]string{}, ids: map[string]string{}, conns: map[*link]struct{}{},
		cut: func(a, b string) bool { return false }}
}

// ErrCut is what a dial over a cut link returns.
var ErrCut = errors.New("clustertest: link cut")

func (nw *Network) place(id, addr string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.addrs[id], nw.ids[addr] = addr, id
}

func (nw *Network) addr(id string) string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.addrs[id]
}

// dialer is node from's raw dial.
func (nw *Network) dialer(from string) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nw.mu.Lock()
		to := nw.ids[addr]
		down := nw.cut(from, to)
		nw.mu.Unlock()
		if down {
			return nil, ErrCut
		}
		var d net.Dialer
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		l := &link{Conn: raw, a: from, b: to, nw: nw}
		nw.mu.Lock()
		defer nw.mu.Unlock()
		if nw.cut(from, to) {
			raw.Close()
			return nil, ErrCut
		}
		nw.conns[l] = struct{}{}
		return l, nil
	}
}

// split makes cut the rule and breaks the open connections it cuts.
func (nw *Network) split(cut func(a, b string) bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut = cut
	for l := range nw.conns {
		if cut(l.a, l.b) {
			l.Conn.Close() // the far end reads EOF
			delete(nw.conns, l)
		}
	}
}

// link is a connection node a dialed to node b.
type link struct {
	net.Conn
	a, b string
	nw   *Network
}

func (l *link) Close() error {
	l.nw.mu.Lock()
	delete(l.nw.conns, l)
	l.nw.mu.Unlock()
	return l.Conn.Close()
}
