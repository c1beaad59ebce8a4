// Package feed is the change feed between origins and edge nodes: what an
// edge may read of the origin's store, and the long-poll read of it.
//
// An edge reads the records of the repositories assigned to it and the
// global records it needs to authorise requests while every origin is
// away (users with their password hashes, API token hashes, groups, and
// the grants on its repositories); never login sessions (an edge checks a
// session with an origin) and never edge node records (they hold other
// nodes' credential hashes). A read from index 0 lists every live record
// it may see, so a new edge, or an edge given a new repository, catches
// up with the same call it then keeps following with.
package feed

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Bounds of one read.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
	MaxWait      = 60 * time.Second
)

// kinds are the record kinds an edge may read.
var kinds = []meta.Kind{meta.KindUser, meta.KindToken, meta.KindGroup, meta.KindPermission,
	meta.KindRepo, meta.KindArtifact, meta.KindKV}

// ErrNotAssigned refuses a read of a repository not assigned to the node.
var ErrNotAssigned = errors.New("feed: the repository is not assigned to this edge node")

// Request is one read of the feed.
type Request struct {
	// Since is the last index the reader has applied (0: none).
	Since uint64
	// Repo, when set, reads only that repository's records (an edge
	// catching up on a repository it was just given); it must be assigned.
	Repo string
	// Limit bounds the changes answered (0: DefaultLimit).
	Limit int
	// Wait is how long to wait for a change when there is none yet.
	Wait time.Duration
}

// Page is what one read answers.
type Page struct {
	Changes []meta.Change `json:"changes"`
	// Next is the index to read from next: the reader has seen everything
	// it may see up to it.
	Next uint64 `json:"next"`
}

// Filter is what node e may read; only, when set, narrows it to one of
// its repositories and drops the global records.
func Filter(e *meta.EdgeNode, only string) meta.ChangeFilter {
	assigned := slices.Clone(e.Repositories)
	f := meta.ChangeFilter{Kinds: kinds, Repos: func(id string) bool { _, ok := slices.BinarySearch(assigned, id); return ok }}
	if only != "" {
		f.Repos, f.NoGlobal = func(id string) bool { return id == only }, true
	}
	return f
}

// Read answers one read of the feed for node e. When nothing has changed
// that the node may see, it waits up to r.Wait (at most MaxWait) for the
// store to apply more, and answers an empty page when none of it is for
// the node. A Since older than the deletions the store remembers is
// meta.ErrCompacted: the node must read again from 0.
func Read(ctx context.Context, s *meta.Store, e *meta.EdgeNode, r Request) (Page, error) {
	if r.Repo != "" {
		if _, ok := slices.BinarySearch(e.Repositories, r.Repo); !ok {
			return Page{}, ErrNotAssigned
		}
	}
	limit := r.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	ctx, cancel := context.WithTimeout(ctx, min(max(r.Wait, 0), MaxWait))
	defer cancel()
	f, since := Filter(e, r.Repo), r.Since
	for {
		var p Page
		err := s.View(func(tx *meta.Tx) error {
			var err error
			p.Changes, p.Next, err = tx.Changes(since, f, limit)
			return err
		})
		if err != nil || len(p.Changes) > 0 || since == 0 {
			return p, err
		}
		// Nothing for this node up to p.Next: wait for the next entry.
		since = max(since, p.Next)
		if s.WaitIndex(ctx, since+1) != nil {
			p.Next = since
			return p, nil
		}
	}
}
