// Package leader applies metadata commands through Raft. Writes arriving
// at a follower are forwarded to the leader in one hop (not yet: a single
// origin is always its own leader).
package leader

import (
	"context"
	"errors"

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
var ErrNoLeader = errors.New("no raft leader available")

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
	if err != nil {
		return 0, err
	}
	if e, ok := resp.(error); ok {
		return idx, e
	}
	return idx, nil
}
