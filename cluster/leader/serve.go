package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Serve is the leader's side of the peers' RPC over node: it commits the
// commands followers decided (Forwarding.Apply), answers Sync with the
// last index its store applied (applied), and removes peers. A node that
// is not the leader refuses with peerrpc.ErrNotLeader and the peer asks
// again.
func Serve(node *raftnode.Node, applied func() uint64) peerrpc.Leader {
	return service{node: node, applied: applied}
}

type service struct {
	node    *raftnode.Node
	applied func() uint64
}

// Apply commits a command a peer decided: only one this build knows (an
// unknown one would stop every node's state machine).
func (s service) Apply(ctx context.Context, data []byte) (peerrpc.ApplyAnswer, error) {
	if _, err := meta.Decode(data); errors.Is(err, meta.ErrUnknownCommand) {
		// A newer follower's command: this leader's build cannot apply it.
		return peerrpc.ApplyAnswer{Err: meta.ToWire(fmt.Errorf("%w (the leader cannot apply it: %v)", meta.ErrUpgrading, err))}, nil
	} else if err != nil {
		return peerrpc.ApplyAnswer{}, peerrpc.BadRequest("not a command: " + err.Error())
	}
	if !s.node.IsLeader() {
		return peerrpc.ApplyAnswer{}, peerrpc.ErrNotLeader
	}
	idx, resp, err := s.node.Apply(ctx, data)
	switch {
	case errors.Is(err, raftnode.ErrNotLeader):
		return peerrpc.ApplyAnswer{}, peerrpc.ErrNotLeader
	case errors.Is(err, meta.ErrUpgrading):
		return peerrpc.ApplyAnswer{Err: meta.ToWire(err)}, nil
	case err != nil:
		return peerrpc.ApplyAnswer{}, err
	}
	a := peerrpc.ApplyAnswer{Index: idx}
	if e, ok := resp.(error); ok {
		a.Err = meta.ToWire(e)
	}
	return a, nil
}

// Index is the last index the leader's state machine applied, which
// covers every write acknowledged anywhere: the leader applies each
// before it is acknowledged. Not raft's commit index: that counts raft's
// own entries (the no-op a new leader commits), which a store never
// applies.
func (s service) Index(context.Context) (uint64, error) {
	if !s.node.IsLeader() {
		return 0, peerrpc.ErrNotLeader
	}
	return s.applied(), nil
}

// RemovePeer is the leader's side of Forwarding.RemovePeer.
func (s service) RemovePeer(_ context.Context, id string) error {
	err := s.node.RemoveServer(id, 10*time.Second)
	if errors.Is(err, raftnode.ErrNotLeader) {
		return fmt.Errorf("%w: %w", peerrpc.ErrNotLeader, err)
	}
	return err
}
