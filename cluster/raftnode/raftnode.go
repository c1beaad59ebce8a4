// Package raftnode sets up one hashicorp/raft peer: raft-boltdb/v2 for the
// log and stable store, a file snapshot store, a transport whose peers
// prove the cluster key before raft sees a byte (see streamlayer.go), and
// bootstrap of a new single-voter cluster when asked.
package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/logx"
)

// Config of a raft peer.
type Config struct {
	NodeID    string
	BindAddr  string       // host:port the transport listens on
	Advertise string       // address peers dial; BindAddr when empty
	Dir       string       // raft.db and snapshots/ live here
	Bootstrap bool         // form a new cluster with this node as its only voter, if no state exists
	Key       peerauth.Key // the cluster key; a connection that does not prove it is refused
	Logger    *slog.Logger
	// Dial makes the raw connections to peers, under their TLS (nil:
	// TCP); tests cut links through it.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Timeouts; zero uses raft's defaults.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
}

// Node is a running raft peer.
type Node struct {
	Raft      *raft.Raft
	transport *raft.NetworkTransport
	stream    *streamLayer
	logStore  *raftboltdb.BoltStore
	gate      atomic.Pointer[func(data []byte) error]
	done      chan struct{} // closed at Shutdown
	closeOnce sync.Once
}

// ErrNotLeader is returned by Apply on a follower.
var ErrNotLeader = errors.New("raftnode: not the leader")

// New starts a peer over fsm.
func New(cfg Config, fsm raft.FSM) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, err
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	var self atomic.Pointer[raft.Raft]
	rc.Logger = logx.HCLogDemoting(cfg.Logger, "raft", func(msg string) bool {
		return chatter(msg, func() int {
			if r := self.Load(); r != nil {
				return voters(r)
			}
			return 0
		})
	})
	// The store is durable on its own and knows its last applied index, so
	// replaying a snapshot into it at every start would only cost time.
	rc.NoSnapshotRestoreOnStart = true
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
		rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}

	logStore, err := raftboltdb.NewBoltStore(filepath.Join(cfg.Dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("raft log store: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, logx.HCLog(cfg.Logger, "raft-snapshots"))
	if err != nil {
		logStore.Close()
		return nil, fmt.Errorf("raft snapshot store: %w", err)
	}
	// With no advertise address the transport advertises what it bound
	// (which resolves port 0 for tests).
	var advAddr net.Addr
	if cfg.Advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.Advertise)
		if err != nil {
			logStore.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", cfg.Advertise, err)
		}
		advAddr = a
	}
	stream, err := listen(cfg.BindAddr, advAddr, cfg.Key, handshakeTimeout, cfg.Logger, cfg.Dial)
	if err != nil {
		logStore.Close()
		return nil, fmt.Errorf("raft transport on %s: %w", cfg.BindAddr, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: logx.HCLog(cfg.Logger, "raft-net"),
	})
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(logStore, logStore, snaps)
		if err != nil {
			trans.Close()
			logStore.Close()
			return nil, err
		}
		if !has {
			err := raft.BootstrapCluster(rc, logStore, logStore, snaps, trans, raft.Configuration{
				Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}},
			})
			if err != nil {
				trans.Close()
				logStore.Close()
				return nil, fmt.Errorf("raft bootstrap: %w", err)
			}
		}
	}
	r, err := raft.NewRaft(rc, fsm, logStore, logStore, snaps, trans)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, err
	}
	self.Store(r)
	return &Node{Raft: r, transport: trans, stream: stream, logStore: logStore, done: make(chan struct{})}, nil
}

// RPCListener yields the connections peers open for RPC on the raft
// port (see DialRPC), authenticated like raft's: serve them (HTTP, say)
// until the node shuts down.
func (n *Node) RPCListener() net.Listener {
	return &rpcListener{l: n.stream, closed: make(chan struct{})}
}

// rpcDialTimeout bounds connecting to a peer and proving the key: a peer
// behind a partition (its packets dropped) fails the dial in this time,
// not in the kernel's minutes.
const rpcDialTimeout = 5 * time.Second

// DialRPC opens an authenticated RPC connection to the peer whose raft
// address is addr.
func (n *Node) DialRPC(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcDialTimeout)
	defer cancel()
	return n.stream.dial(ctx, addr, muxRPC)
}

// electionWarning is what raft logs when a follower's heartbeat timeout
// starts an election.
const electionWarning = "heartbeat timeout reached, starting election"

// chatter is what raft logs as a warning or an error in a cluster's
// normal life, logged at debug here: a follower that joined or fell
// behind is sent older entries; an election asks every voter for its
// vote, and one that is down (the old leader, in a failover) fails to
// answer; a lone voter's every start times out waiting for a leader it
// cannot have and elects itself (voters tells how many there are; a
// voter of a larger cluster that lost its leader still warns). Real
// failures stay loud: a leader that cannot reach a quorum, heartbeats
// and entries that do not reach a follower.
func chatter(msg string, voters func() int) bool {
	switch msg {
	case "appendEntries rejected, sending older logs", "failed to make requestVote RPC":
		return true
	case electionWarning:
		return voters() == 1
	}
	return false
}

// voters counts the voters of r's latest configuration. GetConfiguration
// reads a copy, so raft's own goroutines may call it (from the logger).
func voters(r *raft.Raft) int {
	n := 0
	for _, s := range r.GetConfiguration().Configuration().Servers {
		if s.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// SetGate has Apply check every command with gate first (see
// leader.Gate); a refusal is returned as is, nothing committed.
func (n *Node) SetGate(gate func(data []byte) error) { n.gate.Store(&gate) }

// Check runs the gate on an encoded command (nil when none is set).
func (n *Node) Check(data []byte) error {
	if g := n.gate.Load(); g != nil {
		return (*g)(data)
	}
	return nil
}

// Apply commits data and waits until the local FSM applied it. It returns
// the entry's index and the FSM's response.
func (n *Node) Apply(ctx context.Context, data []byte) (uint64, any, error) {
	if err := n.Check(data); err != nil {
		return 0, nil, err
	}
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	f := n.Raft.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return 0, nil, ErrNotLeader // refused before it was logged
		}
		return 0, nil, err // raft.ErrLeadershipLost: it may still commit
	}
	return f.Index(), f.Response(), nil
}

// WaitLeader blocks until the cluster has a leader.
func (n *Node) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if addr, _ := n.Raft.LeaderWithID(); addr != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no raft leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Voters is the number of voters in the latest cluster configuration.
func (n *Node) Voters() int { return voters(n.Raft) }

// IsLeader reports whether this node leads.
func (n *Node) IsLeader() bool { return n.Raft.State() == raft.Leader }

// Barrier waits until every entry committed before it is applied locally,
// so a new leader serves reads that include its predecessor's writes.
func (n *Node) Barrier(timeout time.Duration) error { return n.Raft.Barrier(timeout).Error() }

// Shutdown stops raft and closes its stores.
func (n *Node) Shutdown() error {
	n.closeOnce.Do(func() { close(n.done) })
	err := n.Raft.Shutdown().Error()
	n.transport.Close()
	n.stream.served.drain(5 * time.Second) // no heartbeat handler is left writing to the store
	if cerr := n.logStore.Close(); err == nil {
		err = cerr
	}
	return err
}

// Server is one member of the raft configuration.
type Server struct {
	ID    string
	Addr  string
	Voter bool
}

// Servers is the latest raft configuration.
func (n *Node) Servers() ([]Server, error) {
	f := n.Raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// BootstrapWith forms a new cluster of these voters, when this node has
// no raft state yet (every node of a new cluster does it with the same
// list; raft lets the first election decide). A node with state, or a
// cluster already formed, makes it a no-op.
func (n *Node) BootstrapWith(servers []Server) error {
	var conf raft.Configuration
	for _, s := range servers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Addr), Suffrage: raft.Voter})
	}
	err := n.Raft.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// AddVoter makes a node a voter (or updates its address); leader only.
func (n *Node) AddVoter(id, addr string, timeout time.Duration) error {
	return leaderErr(n.Raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error())
}

// RemoveServer takes a node out of the configuration; leader only.
func (n *Node) RemoveServer(id string, timeout time.Duration) error {
	return leaderErr(n.Raft.RemoveServer(raft.ServerID(id), 0, timeout).Error())
}

// TransferLeadership hands leadership to another voter, when this node
// leads (a graceful stop of the leader).
func (n *Node) TransferLeadership() error {
	if !n.IsLeader() || n.Voters() < 2 {
		return nil
	}
	return n.Raft.LeadershipTransfer().Error()
}

// Leader is the current leader's id and raft address, "" when none is
// known.
func (n *Node) Leader() (id, addr string) {
	a, i := n.Raft.LeaderWithID()
	return string(i), string(a)
}

// State is this node's raft state: leader, follower, candidate or
// shutdown.
func (n *Node) State() string { return strings.ToLower(n.Raft.State().String()) }

// Addr is the raft address this node advertises.
func (n *Node) Addr() string { return string(n.transport.LocalAddr()) }

func leaderErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return ErrNotLeader
	}
	return err
}

// OnLeaderChange calls fn, on a goroutine of its own, each time this
// node sees the cluster's leader change, until the node shuts down.
func (n *Node) OnLeaderChange(fn func()) {
	ch := make(chan raft.Observation, 16)
	n.Raft.RegisterObserver(raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	}))
	go func() {
		for {
			select {
			case <-ch:
				fn()
			case <-n.done:
				return
			}
		}
	}()
}

// Stat reads one of raft's own figures ("term", "commit_index",
// "applied_index", "last_snapshot_index"...) as a number; 0 when raft has
// none.
func (n *Node) Stat(name string) float64 {
	v, _ := strconv.ParseFloat(n.Raft.Stats()[name], 64)
	return v
}
