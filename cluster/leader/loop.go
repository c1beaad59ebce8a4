package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/depot-registry/depot/cluster/raftnode"
)

// Loop runs the work that must happen once in the cluster (creating the
// initial administrator, purging expired sessions, later webhook delivery
// and migrations) on whichever node leads: each time this node becomes
// the leader, once a barrier has applied here everything earlier leaders
// committed, it calls run with a context that ends when the leadership is
// lost or ctx ends. Loop returns when ctx ends and run has returned.
// raft's leadership channel has one reader: this loop.
func Loop(ctx context.Context, node *raftnode.Node, log *slog.Logger, run func(context.Context)) {
	changes := node.Raft.LeaderCh()
	leading := node.IsLeader()
	for {
		if leading {
			leading = lead(ctx, node, changes, log, run)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case leading = <-changes:
		}
	}
}

// lead is one term of leadership: the barrier, then run until the
// leadership is lost. It returns the latest leadership news.
func lead(ctx context.Context, node *raftnode.Node, changes <-chan bool, log *slog.Logger, run func(context.Context)) bool {
	term, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for term.Err() == nil {
			err := node.Barrier(10 * time.Second)
			if err == nil {
				log.Info("leading: running the cluster's jobs")
				run(term)
				return
			}
			log.Warn("leading, but the barrier before the cluster's jobs failed; retrying", "err", err)
			select {
			case <-term.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	defer func() { cancel(); <-done }()
	for {
		select {
		case <-ctx.Done():
			return false
		case leading := <-changes:
			if !leading {
				log.Info("no longer leading: the cluster's jobs stop here")
				return false
			}
		}
	}
}
