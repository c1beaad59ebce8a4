package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/meta"
)

// Follower is the edge's side of the feed: it keeps a replica (a follower
// meta.Store) up to date with the node's feed at the origins, catches it
// up on repositories given to the node and on users and groups that join
// its audience, and drops what leaves. It owns the replica's changes:
// they are made one at a time.
type Follower struct {
	Client *protocol.Client
	Store  *meta.Store
	fails  atomic.Int64
	// settling serialises the changes of the replica that can move the
	// node's audience with the Settle after each, so that every move is
	// seen between one Settle's before and after; unsettled keeps the
	// before of one that failed, for the next to start from; settled says
	// whether the replica has been settled once since the follower started
	// (a replica from an older version holds every user).
	settling  sync.Mutex
	unsettled *View
	settled   atomic.Bool
}

// Failures counts the feed reads that failed (for metrics).
func (f *Follower) Failures() int64 { return f.fails.Load() }

// read does one read of the feed, naming the kinds this build applies.
func (f *Follower) read(ctx context.Context, q protocol.FeedQuery) (protocol.Page, error) {
	q.Kinds = Applicable()
	return f.Client.Read(ctx, q)
}

// Sync brings s up to date once: it reads pages from s's applied index
// until one is empty, waiting up to wait for the first change. On
// ErrResync it reads everything again from 0 (Resync).
func (f *Follower) Sync(ctx context.Context, wait time.Duration) error {
	s := f.Store
	if !f.settled.Load() {
		if err := f.settle(ctx, func() error { return nil }); err != nil {
			return err
		}
		f.settled.Store(true)
	}
	for {
		p, err := f.read(ctx, protocol.FeedQuery{Since: s.LastApplied(), Wait: wait})
		if errors.Is(err, protocol.ErrResync) {
			return f.serially(func() error { return f.Resync(ctx) })
		}
		if err != nil {
			return err
		}
		apply := func() error { return s.ApplyFeed(p.Changes, p.Next) }
		if relevant(p.Changes) {
			err = f.settle(ctx, apply)
		} else {
			err = f.serially(apply)
		}
		if err != nil {
			return err
		}
		if len(p.Changes) == 0 {
			return nil
		}
		wait = 0
	}
}

// CatchUp reads one repository from 0 into s (a repository newly assigned
// to the node), without moving s's applied index: the feed goes on from
// where it was and brings anything newer.
func (f *Follower) CatchUp(ctx context.Context, repoID string) error {
	s := f.Store
	var since uint64
	for {
		p, err := f.read(ctx, protocol.FeedQuery{Since: since, Repo: repoID})
		if err != nil {
			return err
		}
		if err := s.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
		if len(p.Changes) == 0 || p.Next <= since {
			return nil
		}
		since = p.Next
	}
}

// Resync reads everything the node may see again from 0 and removes what
// is no longer there (deleted while s was too far behind to hear of it).
func (f *Follower) Resync(ctx context.Context) error {
	s := f.Store
	type rec struct {
		k   meta.Kind
		key string
	}
	seen := map[rec]bool{}
	var since uint64
	for {
		p, err := f.read(ctx, protocol.FeedQuery{Since: since})
		if err != nil {
			return err
		}
		for _, ch := range p.Changes {
			seen[rec{ch.Kind, ch.Key}] = !ch.Deleted
		}
		if err := s.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
		if len(p.Changes) == 0 || p.Next <= since {
			return s.RetainOnly(kinds, func(k meta.Kind, key string) bool { return seen[rec{k, key}] }, max(since, p.Next))
		}
		since = p.Next
	}
}

// Follow keeps s up to date with the feed until ctx ends, long-polling
// with wait and retrying failures with a growing pause (at most 30 s), cut
// short by a signal on retry (the node heard from an origin again). Each
// failure is logged; it returns ctx's error.
func (f *Follower) Follow(ctx context.Context, wait time.Duration, retry <-chan struct{}, log *slog.Logger) error {
	pause := time.Second
	for ctx.Err() == nil {
		err := f.Sync(ctx, wait)
		if err == nil || ctx.Err() != nil {
			pause = time.Second
			continue
		}
		f.fails.Add(1)
		log.Warn("change feed: read failed; retrying", "err", err, "retry_in", pause)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		case <-retry:
		}
		pause = min(2*pause, 30*time.Second)
	}
	return ctx.Err()
}

// Reconcile makes the follower hold exactly the assigned repositories: it
// catches up on each assigned one it has not followed yet and drops the
// records of each it followed that is no longer assigned. A catch-up cut
// short is done again next time (pages apply idempotently).
func (f *Follower) Reconcile(ctx context.Context, assigned []string) error {
	s := f.Store
	followed, err := s.Followed()
	if err != nil || slices.Equal(followed, slices.Sorted(slices.Values(assigned))) {
		return err
	}
	return f.settle(ctx, func() error { return f.reconcile(ctx, assigned) })
}

// serially makes change to s while no other change is being made (a
// catch-up on a repository given back, which must not interleave with
// feed pages that leave it out).
func (f *Follower) serially(change func() error) error {
	f.settling.Lock()
	defer f.settling.Unlock()
	return change()
}

// settle makes change to s, then Settles s's audience. When either
// fails, the next settle starts from this one's before: what moved since
// is caught up then.
func (f *Follower) settle(ctx context.Context, change func() error) error {
	f.settling.Lock()
	defer f.settling.Unlock()
	s, before := f.Store, f.unsettled
	if before == nil {
		v, err := ViewOf(s)
		if err != nil {
			return err
		}
		before = &v
	}
	err := change()
	if err == nil {
		err = f.Settle(ctx, *before)
	}
	f.unsettled = nil
	if err != nil {
		f.unsettled = before
	}
	return err
}

func (f *Follower) reconcile(ctx context.Context, assigned []string) error {
	s := f.Store
	followed, err := s.Followed()
	if err != nil {
		return err
	}
	for _, id := range assigned {
		if slices.Contains(followed, id) {
			continue
		}
		if err := f.CatchUp(ctx, id); err != nil {
			return fmt.Errorf("catching up on repository %s: %w", id, err)
		}
		if err := s.SetFollowed(id, true); err != nil {
			return err
		}
	}
	for _, id := range followed {
		if !slices.Contains(assigned, id) {
			if err := s.SetFollowed(id, false); err != nil {
				return err
			}
		}
	}
	return nil
}
