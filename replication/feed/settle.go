package feed

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/meta"
)

// View is a node's audience as its replica says it is (see audience.go).
type View struct {
	All    bool            // a repository is public: every user
	Users  map[string]bool // otherwise its users (admins, granted, members of granted groups)
	Groups map[string]bool // the groups granted on its repositories
}

// ViewOf works out from s the audience of the repositories it holds.
func ViewOf(s *meta.Store) (View, error) {
	v := View{Users: map[string]bool{}, Groups: map[string]bool{}}
	err := s.View(func(tx *meta.Tx) error {
		v.All, v.Users, v.Groups = false, map[string]bool{}, map[string]bool{}
		repos, err := tx.Repos() // (a follower holds its repositories only)
		if err != nil {
			return err
		}
		ids := make([]string, len(repos))
		for i, r := range repos {
			ids[i] = r.ID
		}
		a, err := audienceOf(tx, ids)
		if err != nil {
			return err
		}
		v.All, v.Groups = a.all, maps.Clone(a.groups)
		if a.all {
			return nil
		}
		maps.Copy(v.Users, a.users)
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			if in, err := a.user(u.ID); err != nil {
				return err
			} else if in {
				v.Users[u.ID] = true
			}
		}
		for id := range a.groups {
			if g, err := tx.Group(id); err == nil {
				for _, m := range g.Members {
					v.Users[m] = true
				}
			}
		}
		return nil
	})
	return v, err
}

// relevant reports whether changes can move a node's audience: grants,
// groups, users (a role), repositories (public or not).
func relevant(changes []meta.Change) bool {
	return slices.ContainsFunc(changes, func(c meta.Change) bool {
		switch c.Kind {
		case meta.KindPermission, meta.KindGroup, meta.KindUser, meta.KindRepo:
			return true
		}
		return false
	})
}

// Settle brings s's users and groups in line with its audience after a
// change moved it from before: it reads from an origin whom the change
// brought in (their records, tokens and sessions, which the feed did not
// send while they were out of it; every user when a repository became
// public) and forgets whom it left out.
func (f *Follower) Settle(ctx context.Context, before View) error {
	s := f.Store
	after, err := ViewOf(s)
	if err != nil {
		return err
	}
	if after.All {
		if before.All {
			return nil
		}
		return f.catchUpGlobal(ctx)
	}
	// Groups first: their members are in the audience once they are here.
	if err := f.bringIn(ctx, newcomers(s, before, after.Groups, meta.KindGroup)); err != nil {
		return err
	}
	if after, err = ViewOf(s); err != nil {
		return err
	}
	if err := f.bringIn(ctx, newcomers(s, before, after.Users, meta.KindUser)); err != nil {
		return err
	}
	if after, err = ViewOf(s); err != nil || after.All {
		return err
	}
	var users, groups []string
	err = s.View(func(tx *meta.Tx) error {
		held, err := tx.Users()
		for _, u := range held {
			if !after.Users[u.ID] {
				users = append(users, u.ID)
			}
		}
		if err != nil {
			return err
		}
		all, err := tx.Groups()
		for _, g := range all {
			if !after.Groups[g.ID] {
				groups = append(groups, g.ID)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return s.Forget(users, groups)
}

// newcomers lists the ids of want the replica must read: those new to the
// audience (their records may have changed while they were out of it,
// unsent), and any it does not hold.
func newcomers(s *meta.Store, before View, want map[string]bool, k meta.Kind) []string {
	var out []string
	_ = s.View(func(tx *meta.Tx) error {
		for _, id := range slices.Sorted(maps.Keys(want)) {
			_, held := tx.Current(k, id)
			was := before.Users[id]
			if k == meta.KindGroup {
				was = before.Groups[id]
			}
			if !held || !(was || before.All && k == meta.KindUser) {
				out = append(out, id)
			}
		}
		return nil
	})
	return out
}

// bringIn reads the named users and groups from an origin into s.
func (f *Follower) bringIn(ctx context.Context, ids []string) error {
	for chunk := range slices.Chunk(ids, protocol.MaxPrincipals) {
		p, err := f.read(ctx, protocol.FeedQuery{Principals: chunk})
		if err != nil {
			return fmt.Errorf("reading users and groups new to this node: %w", err)
		}
		if err := f.Store.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
	}
	return nil
}

// catchUpGlobal reads every user and group of the audience from 0 (a
// repository became public), without moving s's applied index.
func (f *Follower) catchUpGlobal(ctx context.Context) error {
	var since uint64
	for {
		p, err := f.read(ctx, protocol.FeedQuery{Since: since, Global: true})
		if err != nil {
			return fmt.Errorf("reading the users of a repository made public: %w", err)
		}
		if err := f.Store.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
		if len(p.Changes) == 0 || p.Next <= since {
			return nil
		}
		since = p.Next
	}
}
