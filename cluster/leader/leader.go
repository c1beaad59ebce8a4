// Package leader applies metadata commands through Raft: Forwarding takes
// a write wherever it arrived and commits it through the leader in one
// hop; Reconcile keeps raft's voters in line with the gossip pool.
package leader

import (
	"context"
	"errors"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Applier commits a command and returns its log index once it has been
// applied locally. A command the state machine refused returns its error
// (a meta sentinel such as meta.ErrConflict).
type Applier interface {
	Apply(ctx context.Context, c meta.Command) (uint64, error)
}

// Local applies on this node, which must be the leader.
type Local struct {
	Node *raftnode.Node
}

var _ Applier = (*Local)(nil)

// ErrNoLeader is returned when no leader can take the write.
var ErrNoLeader = meta.ErrNoLeader

// Apply encodes c and commits it.
func (l *Local) Apply(ctx context.Context, c meta.Command) (uint64, error) {
	data, err := meta.Encode(c)
	if err != nil {
		return 0, err
	}
	idx, resp, err := l.Node.Apply(ctx, data)
	if errors.Is(err, raftnode.ErrNotLeader) {
		return 0, ErrNoLeader
	}
	if errors.Is(err, raft.ErrLeadershipLost) {
		return 0, ErrUnknownOutcome
	}
	if err != nil {
		return 0, err
	}
	if e, ok := resp.(error); ok {
		return idx, e
	}
	return idx, nil
}
