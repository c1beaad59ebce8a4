package meta

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A follower (an edge node's replica) is a store fed by the change feed
// of another: it holds the records the feed passes it, each with the
// modify index it has on the origin, and keeps every derived index with
// the same hooks, so the same queries and format handlers run on it.

// ApplyChanges makes the store hold what one page of a change feed says,
// in one transaction: each record as it is now on the origin, each
// deletion as a tombstone, and next as the last applied index. A change
// older than what the store holds of that record (a value or a
// deletion) is ignored, so pages may be applied again or interleaved
// without bringing back what was deleted, and the applied index never
// moves back. Waiters on WaitIndex are woken.
func (s *Store) ApplyChanges(changes []Change, next uint64) error {
	return s.apply(changes, next, false)
}

// ApplyFeed is ApplyChanges for a page of the follower's own feed: it
// leaves out the records of repositories the follower has dropped
// (SetFollowed off), since a page read before the origin took one away
// may arrive after the follower dropped it, and would bring back what was
// dropped. (A catch-up on a repository given back, with ApplyChanges,
// reads it whole again.)
func (s *Store) ApplyFeed(changes []Change, next uint64) error {
	return s.apply(changes, next, true)
}

func (s *Store) apply(changes []Change, next uint64, feed bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var last uint64
	err := s.update(func(tx *Tx) error {
		last = tx.lastApplied()
		var dropped []string
		if feed {
			dropped = tx.repoList(keyDropped)
		}
		for _, c := range inApplyOrder(changes) {
			if _, ok := kinds[c.Kind]; !ok {
				return fmt.Errorf("meta: change of unknown kind %d", c.Kind)
			}
			if _, gone := slices.BinarySearch(dropped, c.Repo); gone && c.Repo != "" {
				continue
			}
			tx.idx = c.Index
			held := tx.space(Space(c.Kind)).Get([]byte(c.Key))
			var err error
			switch {
			case held != nil && getU64(held) >= c.Index,
				held == nil && getU64(tx.bucket(bTombs).Get(tombKey(c.Kind, c.Key))) >= c.Index && c.Index > 0:
				// What is here is as new or newer (pages of one
				// repository's catch-up and of the feed may interleave):
				// an older value never overwrites it, nor resurrects it.
			case c.Deleted && held != nil:
				err = tx.delRec(c.Kind, c.Key)
			case c.Deleted:
				// Never held here: nothing to remove.
			default:
				err = tx.putRaw(c.Kind, c.Key, c.Index, c.Value)
			}
			if err != nil {
				return fmt.Errorf("meta: applying change %d (%s %q): %w", c.Index, c.Kind, c.Key, err)
			}
		}
		last = max(last, next)
		return tx.settle(last, s.retention)
	})
	if err != nil {
		return err
	}
	s.setApplied(last)
	return nil
}

// inApplyOrder orders the changes of each index as the command that made
// them did its work: deletions first, children before parents (a
// repository's artifacts and keys before the repository, whose totals go
// with it), then writes in kind order (users before their tokens,
// repositories before their artifacts and keys). Kinds are numbered
// parents first.
func inApplyOrder(changes []Change) []Change {
	out := slices.Clone(changes)
	slices.SortStableFunc(out, func(a, b Change) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		if a.Deleted != b.Deleted {
			if a.Deleted {
				return -1
			}
			return 1
		}
		if a.Deleted {
			return cmp.Compare(b.Kind, a.Kind)
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return out
}

// RetainOnly ends a follower's resync from index 0 at index at: it
// deletes every record of the given kinds that keep does not report as
// seen in the resync (deleted on the origin while the follower was too
// far behind to hear of it), and records at as applied.
func (s *Store) RetainOnly(kinds []Kind, keep func(Kind, string) bool, at uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	err := s.update(func(tx *Tx) error {
		tx.idx = at
		// Children before parents, as inApplyOrder deletes.
		for _, k := range slices.Backward(slices.Sorted(slices.Values(kinds))) {
			var gone []string
			cur := tx.space(Space(k)).Cursor()
			for key, _ := cur.First(); key != nil; key, _ = cur.Next() {
				if !keep(k, string(key)) {
					gone = append(gone, string(key))
				}
			}
			for i := len(gone) - 1; i >= 0; i-- {
				if err := tx.delRec(k, gone[i]); err != nil {
					return err
				}
			}
		}
		return tx.settle(max(tx.lastApplied(), at), s.retention)
	})
	if err != nil {
		return err
	}
	s.setApplied(max(s.LastApplied(), at))
	return nil
}

// keyFollowed keeps, in a follower, the repositories it has caught up on;
// keyDropped those it dropped since (ApplyFeed).
var (
	keyFollowed = []byte("followed_repos")
	keyDropped  = []byte("dropped_repos")
)

// Followed lists, sorted, the repositories the follower has caught up on.
func (s *Store) Followed() ([]string, error) {
	var ids []string
	err := s.View(func(tx *Tx) error {
		ids = tx.followed()
		return nil
	})
	return ids, err
}

func (tx *Tx) followed() []string { return tx.repoList(keyFollowed) }

// repoList reads a sorted list of repository ids a follower keeps.
func (tx *Tx) repoList(k []byte) []string {
	var ids []string
	if raw := tx.bucket(bSys).Get(k); raw != nil {
		_ = json.Unmarshal(raw, &ids)
	}
	return ids
}

func (tx *Tx) setRepoList(k []byte, ids []string) error {
	raw, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return tx.bucket(bSys).Put(k, raw)
}

// RewriteUsers applies fix to every user record of a follower store in
// place, keeping each record's index: what an edge received before the
// origins stopped sending something (password hashes) is taken out of
// its replica too. fix reports whether it changed the user. A store with
// nothing to fix is only read.
func (s *Store) RewriteUsers(fix func(*User) bool) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	type rec struct {
		id  string
		idx uint64
		u   User
	}
	var fixed []rec
	err := s.db.View(func(btx *bolt.Tx) error {
		cur := (&Tx{tx: btx}).space(Space(KindUser)).Cursor()
		for k, raw := cur.First(); k != nil; k, raw = cur.Next() {
			var u User
			if err := json.Unmarshal(raw[8:], &u); err != nil {
				return err
			}
			if fix(&u) {
				fixed = append(fixed, rec{string(k), getU64(raw), u})
			}
		}
		return nil
	})
	if err != nil || len(fixed) == 0 {
		return 0, err
	}
	// The follower applies nothing meanwhile: it is not running yet.
	err = s.update(func(tx *Tx) error {
		for _, r := range fixed {
			body, err := json.Marshal(r.u)
			if err != nil {
				return err
			}
			tx.idx = r.idx
			if err := tx.putRaw(KindUser, r.id, r.idx, body); err != nil {
				return err
			}
		}
		return nil
	})
	return len(fixed), err
}

// Forget drops from a follower the given users, with their API tokens and
// sessions, and groups: records the origin still has but no longer sends
// this follower (they no longer decide access to its repositories).
// Unlike a deletion it leaves no tombstone, so the origin can send them
// again, at the index they have, when they matter once more.
func (s *Store) Forget(users, groups []string) error {
	if len(users) == 0 && len(groups) == 0 {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.update(func(tx *Tx) error {
		tx.local = true
		for _, id := range users {
			tokens, sessions := tx.Credentials(id)
			if err := tx.delAll(KindSession, sessions); err != nil {
				return err
			}
			if err := tx.delAll(KindToken, tokens); err != nil {
				return err
			}
			if tx.space(Space(KindUser)).Get([]byte(id)) != nil {
				if err := tx.delRec(KindUser, id); err != nil {
					return err
				}
			}
		}
		for _, id := range groups {
			if tx.space(Space(KindGroup)).Get([]byte(id)) != nil {
				if err := tx.delRec(KindGroup, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// SetFollowed records that the follower has caught up on a repository
// (on), or drops every record of the repository (its artifacts, format
// keys, grants and itself) and forgets it (off): a repository no longer
// assigned to the node. The drop leaves no tombstones (the origin did
// not delete the records, and a catch-up on the repository given back
// must bring them at the index they have), and feed pages leave the
// repository out until it is followed again (ApplyFeed).
func (s *Store) SetFollowed(repoID string, on bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.update(func(tx *Tx) error {
		tx.local = true
		tx.idx = tx.lastApplied()
		ids, dropped := tx.followed(), tx.repoList(keyDropped)
		other := func(id string) bool { return id == repoID }
		if on {
			ids, dropped = sortedSet(append(ids, repoID)), slices.DeleteFunc(dropped, other)
		} else {
			ids, dropped = slices.DeleteFunc(ids, other), sortedSet(append(dropped, repoID))
			if err := tx.dropRepo(repoID); err != nil {
				return err
			}
		}
		if err := tx.setRepoList(keyDropped, dropped); err != nil {
			return err
		}
		return tx.setRepoList(keyFollowed, ids)
	})
}

// dropRepo deletes a repository's records, children first: what
// RepoDelete does, and what a follower does with a repository no longer
// assigned to it.
func (tx *Tx) dropRepo(id string) error {
	_, arts := tx.under(SpaceArtifactPaths, key(id, ""))
	kv, _ := tx.under(Space(KindKV), key(id, ""))
	infos, _ := tx.under(Space(KindPackageInfo), key(id, ""))
	for _, err := range []error{
		tx.delAll(KindKV, kv),
		tx.delAll(KindPackageInfo, infos),
		tx.delAll(KindArtifact, arts),
		tx.delAll(KindPermission, tx.prefixKeys(bPermRepo, key(id, ""))),
	} {
		if err != nil {
			return err
		}
	}
	if tx.space(Space(KindRepo)).Get([]byte(id)) == nil {
		return nil
	}
	return tx.delRec(KindRepo, id)
}

// FollowLog runs step while ctx lasts, for a leader's job that reads the
// log's changes in batches: again at once while step says there is more,
// else once a new entry is applied (or poll has passed). An error other
// than a stale decision (ErrConflict: another leader moved on) is told
// to failed, and the step tried again after the wait.
func (s *Store) FollowLog(ctx context.Context, poll time.Duration, step func(context.Context) (more bool, err error), failed func(error)) {
	for ctx.Err() == nil {
		applied := s.LastApplied()
		more, err := step(ctx)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrConflict) {
			failed(err)
		}
		if more && err == nil {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, poll)
		_ = s.WaitIndex(wctx, applied+1)
		cancel()
	}
}
