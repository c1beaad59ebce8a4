package raftnode

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerauth"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder is an FSM that remembers what it applied.
type recorder struct {
	mu      sync.Mutex
	applied []string
	ch      chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 16)} }

func (f *recorder) Apply(l *raft.Log) any {
	f.mu.Lock()
	f.applied = append(f.applied, string(l.Data))
	f.mu.Unlock()
	f.ch <- string(l.Data)
	return nil
}

func (f *recorder) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (f *recorder) Restore(rc io.ReadCloser) error      { return rc.Close() }

func (f *recorder) Applied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied)
}

// wait returns the next applied command.
func (f *recorder) wait(t *testing.T) string {
	t.Helper()
	select {
	case s := <-f.ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing applied")
		return ""
	}
}

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}

func startNode(t *testing.T, id string, key peerauth.Key, bootstrap bool) (*Node, *recorder) {
	t.Helper()
	fsm := newRecorder()
	n, err := New(Config{NodeID: id, BindAddr: "127.0.0.1:0", Dir: t.TempDir(), Bootstrap: bootstrap, Key: key, Logger: quiet,
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond}, fsm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	if bootstrap {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
		// The new leader's own first entry is written by now, so the log
		// stands still until a test moves it.
		if err := n.Barrier(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return n, fsm
}

// listenT is a stream layer on loopback, closed when the test ends.
func listenT(t *testing.T, key peerauth.Key, timeout time.Duration) *streamLayer {
	t.Helper()
	l, err := listen("127.0.0.1:0", nil, key, timeout, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// keyedTransport is a raft transport over a stream layer with key.
func keyedTransport(t *testing.T, key peerauth.Key) raft.Transport {
	t.Helper()
	l := listenT(t, key, handshakeTimeout)
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: l, MaxPool: 1, Timeout: 10 * time.Second})
	t.Cleanup(func() { tr.Close() })
	return tr
}

func addr(n *Node) raft.ServerAddress { return n.transport.LocalAddr() }

func stat(t *testing.T, n *Node, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(n.Raft.Stats()[name], 10, 64)
	if err != nil {
		t.Fatalf("raft stat %s: %v", name, err)
	}
	return v
}

// forged is an AppendEntries that a single-node leader without transport
// authentication takes: the current term, the node's own last entry as
// the previous one, and a command committed at once.
func forged(t *testing.T, n *Node, from raft.Transport) *raft.AppendEntriesRequest {
	term, last := stat(t, n, "term"), stat(t, n, "last_log_index")
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"),
			Addr: from.EncodePeer("intruder", from.LocalAddr())},
		Term: term, PrevLogEntry: last, PrevLogTerm: stat(t, n, "last_log_term"),
		Entries:           []*raft.Log{{Index: last + 1, Term: term, Type: raft.LogCommand, Data: []byte("forged")}},
		LeaderCommitIndex: last + 1,
	}
}

func TestStrangersCannotAppend(t *testing.T) {
	for name, intruder := range map[string]func(t *testing.T) raft.Transport{
		"plain raft TCP transport": func(t *testing.T) raft.Transport {
			tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 10*time.Second, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			return tr
		},
		"another cluster key": func(t *testing.T) raft.Transport { return keyedTransport(t, peerauth.NewKey()) },
	} {
		t.Run(name, func(t *testing.T) {
			n, fsm := startNode(t, "a", peerauth.NewKey(), true)
			from := intruder(t)
			term, last := stat(t, n, "term"), n.Raft.LastIndex()

			var resp raft.AppendEntriesResponse
			err := from.AppendEntries("a", addr(n), forged(t, n, from), &resp)
			if err == nil {
				t.Fatalf("the node answered a forged AppendEntries (success=%v)", resp.Success)
			}
			// The node hung up; it did not leave the intruder waiting.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection was left open: %v", err)
			}
			if n.Raft.State() != raft.Leader || stat(t, n, "term") != term || n.Raft.LastIndex() != last {
				t.Fatalf("the node's raft state moved: %s term %s last %d", n.Raft.State(), n.Raft.Stats()["term"], n.Raft.LastIndex())
			}
			// The next entry the node applies is its own, and nothing came first.
			if _, _, err := n.Apply(context.Background(), []byte("own")); err != nil {
				t.Fatal(err)
			}
			if got := fsm.Applied(); !slices.Equal(got, []string{"own"}) {
				t.Fatalf("applied %q, want only [own]", got)
			}
		})
	}
}

func TestPeersWithTheKeyReplicate(t *testing.T) {
	key := peerauth.NewKey()
	a, _ := startNode(t, "a", key, true)
	b, bfsm := startNode(t, "b", key, false)
	if err := a.Raft.AddVoter("b", addr(b), 0, 10*time.Second).Error(); err != nil {
		t.Fatalf("add voter: %v", err)
	}
	if _, _, err := a.Apply(context.Background(), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := bfsm.wait(t); got != "hello" {
		t.Fatalf("follower applied %q", got)
	}
}

func TestSilentClientsDoNotBlockPeers(t *testing.T) {
	key := peerauth.NewKey()
	// Handshakes may take an hour: a peer served after the silent clients
	// would wait that long, past its own 10s dial timeout.
	l := listenT(t, key, time.Hour)
	for range 3 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := listenT(t, key, handshakeTimeout).Dial(raft.ServerAddress(l.Addr().String()), 10*time.Second)
	if err != nil {
		t.Fatalf("peer with the key: %v", err)
	}
	defer c.Close()
	select {
	case err := <-accepted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's connection waits behind the silent clients")
	}
}

func TestSilentClientIsDroppedAfterHandshakeTimeout(t *testing.T) {
	l := listenT(t, peerauth.NewKey(), 200*time.Millisecond)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a silent connection was kept past the handshake timeout")
	}
}

func TestDialHonoursTimeout(t *testing.T) {
	l := listenT(t, peerauth.NewKey(), handshakeTimeout)
	// Accepts TCP and never speaks TLS.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	start := time.Now()
	_, err = l.Dial(raft.ServerAddress(mute.Addr().String()), 200*time.Millisecond)
	if err == nil {
		t.Fatal("dial to a server that never answers succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("dial took %s, timeout 200ms", d)
	}
}

func TestStreamLayerClose(t *testing.T) {
	l := listenT(t, peerauth.NewKey(), handshakeTimeout)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("the port still accepts after Close")
	}
}

func TestRequiresKeyAndDialableAddress(t *testing.T) {
	if _, err := New(Config{NodeID: "a", BindAddr: "127.0.0.1:0", Dir: t.TempDir(), Logger: quiet}, newRecorder()); err == nil {
		t.Fatal("started without a cluster key")
	}
	if _, err := New(Config{NodeID: "a", BindAddr: "0.0.0.0:0", Dir: t.TempDir(), Key: peerauth.NewKey(), Logger: quiet}, newRecorder()); err == nil {
		t.Fatal("advertised an unspecified address")
	}
}

// TestPeerRPC: the raft port also carries the peers' RPC: a node with the
// key reaches another's RPC listener (raft keeps working beside it); a
// node with another key cannot; closing the listener ends its Accept.
func TestPeerRPC(t *testing.T) {
	key := peerauth.NewKey()
	a, _ := startNode(t, "a", key, true)
	b, _ := startNode(t, "b", key, false)
	ln := a.RPCListener()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		_, _ = io.ReadFull(c, buf)
		got <- string(buf)
	}()
	c, err := b.DialRPC(t.Context(), a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("hello"))
	if s := <-got; s != "hello" {
		t.Fatalf("the RPC listener got %q", s)
	}
	c.Close()
	if _, _, err := a.Apply(t.Context(), []byte("still raft")); err != nil {
		t.Fatalf("raft beside the RPC: %v", err)
	}

	stranger, _ := startNode(t, "x", peerauth.NewKey(), false)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if c, err := stranger.DialRPC(ctx, a.Addr()); err == nil {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a node with another key reached the RPC")
		}
		c.Close()
	}

	done := make(chan error, 1)
	go func() { _, err := ln.Accept(); done <- err }()
	ln.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Accept after Close returned a connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Accept")
	}
}
