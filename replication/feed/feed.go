// Package feed is the change feed between origins and edge nodes: what an
// edge may read of the origin's store, and the long-poll read of it.
//
// An edge reads the records of the repositories assigned to it (their
// grants included) and, of the global records, those of its audience
// (audience.go): the users who can act on its repositories, without
// their emails and password hashes, which never leave the origins (an
// edge has an origin check a password); their API token hashes, random
// secrets no one can crack; their login sessions (an id, a user and
// times: nothing that proves anything; an edge has an origin vouch for a
// session's tokens, and the replicated session says when one has ended,
// at logout or a password change, so the edge stops honouring its tokens
// as soon as an origin does); the groups granted on its repositories.
// Never edge node records (they hold other nodes' credential hashes). A
// read from index 0 lists every live record it may see, so a new edge,
// or an edge given a new repository, catches up with the same call it
// then keeps following with; one naming users and groups brings those a
// change has just put in its audience.
package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// SkipReport is how soon a long poll that has passed entries of no
// interest to the node answers its new index with an empty page.
const SkipReport = time.Second

// kinds are the record kinds an edge may read (the signing keys' public
// parts and the signatures: never the keys' sealed private parts).
var kinds = []meta.Kind{meta.KindUser, meta.KindToken, meta.KindSession, meta.KindGroup, meta.KindPermission,
	meta.KindRepo, meta.KindArtifact, meta.KindKV, meta.KindPackageInfo, meta.KindPolicy, meta.KindVerdict,
	meta.KindSigningKey, meta.KindSignature, meta.KindPlugin, meta.KindPluginModule}

// legacyKinds are the kinds an edge from before edges named theirs can
// apply.
var legacyKinds = []meta.Kind{1, 2, 3, 4, 5, 6, 7, 8}

// Applicable lists the kinds this build's replica can apply, as an edge
// names them in its reads (Request.Kinds): an origin of a newer build
// sends it no record of a kind it would not know.
func Applicable() []meta.Kind { return slices.Clone(kinds) }

// ErrNotAssigned refuses a read of a repository not assigned to the node.
var ErrNotAssigned = errors.New("feed: the repository is not assigned to this edge node")

// Filter is what node e, whose replica applies the given kinds (nil:
// legacyKinds), may read in tx; only, when set, narrows it to one of its
// repositories and drops the global records.
func Filter(tx *meta.Tx, e *meta.EdgeNode, known []meta.Kind, only string) meta.ChangeFilter {
	if known == nil {
		known = legacyKinds
	}
	assigned := slices.Clone(e.Repositories)
	sent := slices.DeleteFunc(slices.Clone(kinds), func(k meta.Kind) bool { return !slices.Contains(known, k) })
	f := meta.ChangeFilter{Kinds: sent, Repos: func(id string) bool { _, ok := slices.BinarySearch(assigned, id); return ok }}
	if only != "" {
		f.Repos, f.NoGlobal = func(id string) bool { return id == only }, true
	}
	var a *audience // worked out when a page first has a global record
	f.Global = func(c *meta.Change) (bool, error) {
		if a == nil {
			var err error
			if a, err = audienceOf(tx, assigned); err != nil {
				return false, err
			}
		}
		return a.record(c)
	}
	return f
}

// forEdges takes out of the changes what never leaves the origins: the
// users' emails and password hashes (auth.EdgeUser).
func forEdges(changes []meta.Change) error {
	for i := range changes {
		c := &changes[i]
		if c.Kind != meta.KindUser || c.Deleted {
			continue
		}
		var u meta.User
		if err := json.Unmarshal(c.Value, &u); err != nil {
			return fmt.Errorf("feed: user record %s: %w", c.Key, err)
		}
		auth.EdgeUser(&u)
		v, err := json.Marshal(u)
		if err != nil {
			return err
		}
		c.Value = v
	}
	return nil
}

// Read answers one read of the feed for node id. When nothing has changed
// that the node may see, it waits up to r.Wait (at most MaxWait) for the
// store to apply more, and answers an empty page when none of it is for
// the node. A Since older than the deletions the store remembers is
// meta.ErrCompacted: the node must read again from 0.
//
// What the node may see is read in the same snapshot as the changes, at
// every look: a repository assigned while a long poll waits is in the
// filter from its assignment's index on, so a page never moves the node
// past a change of a repository it holds. (The changes of a repository
// from before its assignment come with the node's catch-up on it, which
// reads from 0.)
func Read(ctx context.Context, s *meta.Store, id string, r protocol.FeedQuery) (protocol.Page, error) {
	limit := r.Limit
	if limit <= 0 {
		limit = protocol.DefaultLimit
	}
	limit = min(limit, protocol.MaxLimit)
	ctx, cancel := context.WithTimeout(ctx, min(max(r.Wait, 0), protocol.MaxWait))
	defer cancel()
	since := r.Since
	for {
		var p protocol.Page
		err := s.View(func(tx *meta.Tx) error {
			e, err := tx.Edge(id)
			if err != nil {
				return err
			}
			switch {
			case len(r.Principals) > protocol.MaxPrincipals:
				return fmt.Errorf("feed: at most %d users and groups in one read", protocol.MaxPrincipals)
			case len(r.Principals) > 0:
				a, err := audienceOf(tx, e.Repositories)
				if err == nil {
					p.Changes, err = principals(a, r.Principals)
				}
				p.Next = tx.Applied()
				if err == nil {
					err = forEdges(p.Changes)
				}
				return err
			case r.Repo != "":
				if _, ok := slices.BinarySearch(e.Repositories, r.Repo); !ok {
					return ErrNotAssigned
				}
			}
			f := Filter(tx, e, r.Kinds, r.Repo)
			if r.Global {
				f.Repos = func(string) bool { return false }
			}
			p.Changes, p.Next, err = tx.Changes(since, f, limit)
			if err == nil {
				err = forEdges(p.Changes)
			}
			return err
		})
		if err != nil || len(p.Changes) > 0 || since == 0 || len(r.Principals) > 0 {
			return p, err
		}
		// Nothing for this node up to p.Next: wait for the next entry.
		// Once the wait has passed entries that are not the node's, it
		// ends within SkipReport, so the node's applied index (its
		// reported lag) follows the origin's when nothing is missing.
		if p.Next > since && since == r.Since {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, SkipReport)
			defer cancel()
		}
		since = max(since, p.Next)
		if s.WaitIndex(ctx, since+1) != nil {
			p.Next = since
			return p, nil
		}
	}
}
