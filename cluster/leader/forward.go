package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Forwarding applies commands wherever the write arrived: on the leader
// it commits them itself; on a follower it sends the command, decided
// there with its preconditions, to the leader in one hop (the peers' RPC
// on the raft port), and then waits until this node has applied the
// entry, so what its caller reads next includes the write. While there is
// no leader (an election) it waits, at most Wait.
type Forwarding struct {
	Node  *raftnode.Node
	Store interface {
		WaitIndex(ctx context.Context, i uint64) error
	}
	// Wait bounds the wait for a leader: an election's worth.
	Wait  time.Duration
	peers *peerrpc.Client
}

var _ Applier = (*Forwarding)(nil)

// ErrUnknownOutcome means a command went to the leader and the answer
// did not come back: it may or may not have been committed. The caller
// reports it; retrying is the client's to decide.
var ErrUnknownOutcome = meta.ErrUnknownOutcome

// NewForwarding makes a Forwarding over node; store is this node's,
// peers calls the peers' RPC (PeerClient).
func NewForwarding(node *raftnode.Node, store interface {
	WaitIndex(ctx context.Context, i uint64) error
}, wait time.Duration, peers *peerrpc.Client) *Forwarding {
	return &Forwarding{Node: node, Store: store, Wait: wait, peers: peers}
}

// PeerClient is a client of the peers' RPC whose connections are
// node's authenticated ones.
func PeerClient(node *raftnode.Node) *peerrpc.Client { return peerrpc.NewClient(node.DialRPC) }

// Apply commits c through the leader. A command some voter cannot apply
// yet is refused here already (Gate), whichever node leads.
func (f *Forwarding) Apply(ctx context.Context, c meta.Command) (uint64, error) {
	data, err := meta.Encode(c)
	if err != nil {
		return 0, err
	}
	if err := f.Node.Check(data); err != nil {
		return 0, err
	}
	wait := f.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		if f.Node.IsLeader() {
			idx, resp, err := f.Node.Apply(ctx, data)
			if err == nil {
				if e, ok := resp.(error); ok {
					return idx, e
				}
				return idx, nil
			}
			if errors.Is(err, raft.ErrLeadershipLost) {
				return 0, ErrUnknownOutcome
			}
			if !errors.Is(err, raftnode.ErrNotLeader) {
				return 0, err
			}
		} else if _, addr := f.Node.Leader(); addr != "" {
			idx, werr, err := f.forward(ctx, addr, data)
			if err == nil {
				if err := f.Store.WaitIndex(ctx, idx); err != nil {
					return idx, err
				}
				return idx, werr.Err()
			}
			if !errors.Is(err, errRetry) {
				return 0, err
			}
		}
		if time.Now().After(deadline) {
			return 0, ErrNoLeader
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Sync waits until this node has applied everything the leader had
// applied when Sync was called, so a decision taken here next sees
// every write acknowledged before, on whichever origin (one hop; nothing
// to do on the leader, which applies what it acknowledges first). While
// there is no leader it waits, at most Wait.
func (f *Forwarding) Sync(ctx context.Context) error {
	deadline := time.Now().Add(cmp.Or(f.Wait, 10*time.Second))
	for {
		if f.Node.IsLeader() {
			return nil
		}
		if _, addr := f.Node.Leader(); addr != "" {
			idx, err := f.commitIndex(ctx, addr)
			if err == nil {
				return f.Store.WaitIndex(ctx, idx)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if time.Now().After(deadline) {
			return ErrNoLeader
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (f *Forwarding) commitIndex(ctx context.Context, addr string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(f.Wait, 10*time.Second))
	defer cancel()
	return f.peers.Index(ctx, addr)
}

// errRetry: the command did not reach a leader (no connection, or the
// node asked is not the leader any more): it may be sent again.
var errRetry = errors.New("not delivered to a leader")

func (f *Forwarding) forward(ctx context.Context, addr string, data []byte) (uint64, *meta.WireError, error) {
	a, err := f.peers.Apply(ctx, addr, data)
	if errors.Is(err, peerrpc.ErrNotSent) || errors.Is(err, peerrpc.ErrNotLeader) {
		return 0, nil, fmt.Errorf("%w: %w", errRetry, err) // it took nothing
	}
	if err != nil {
		return 0, nil, err // ctx's error, ErrUnknownOutcome, or a refusal
	}
	return a.Index, a.Err, nil
}

// RemovePeer takes node id out of the raft configuration: on the leader
// directly, elsewhere by asking the leader.
func (f *Forwarding) RemovePeer(ctx context.Context, id string) error {
	if f.Node.IsLeader() {
		return f.Node.RemoveServer(id, 10*time.Second)
	}
	_, addr := f.Node.Leader()
	if addr == "" {
		return ErrNoLeader
	}
	return f.peers.RemovePeer(ctx, addr, id)
}
