package feed

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/depot-registry/depot/shared/meta"
)

// An edge holds the users and groups that decide access to its
// repositories, and no others: its audience. A user belongs to it when a
// credential of theirs can be honoured there: every user when one of the
// repositories is public (any valid credential reads it, an unknown one
// is refused), otherwise the admins and the users granted something on
// one of them, directly or through a group; a group belongs to it when it
// is granted something there. The origins filter the feed by it (in the
// snapshot each page is read from); an edge works it out from its own
// replica to catch up on whom a change brought in and forget whom it left
// out (Settle). A credential an edge does not hold goes to an origin.

// audience is a node's audience in one snapshot.
type audience struct {
	tx     *meta.Tx
	all    bool            // a repository is public: every user
	users  map[string]bool // granted something directly
	groups map[string]bool // granted something
	memo   map[string]bool // users decided so far
}

func audienceOf(tx *meta.Tx, repos []string) (*audience, error) {
	a := &audience{tx: tx, users: map[string]bool{}, groups: map[string]bool{}, memo: map[string]bool{}}
	for _, id := range repos {
		r, err := tx.Repo(id)
		if errors.Is(err, meta.ErrNotFound) {
			continue // (a node that has not caught up on it yet)
		}
		if err != nil {
			return nil, err
		}
		a.all = a.all || r.Public
		grants, err := tx.RepoPermissions(id)
		if err != nil {
			return nil, err
		}
		for _, g := range grants {
			if g.GroupID != "" {
				a.groups[g.GroupID] = true
			} else {
				a.users[g.UserID] = true
			}
		}
	}
	return a, nil
}

// user reports whether user id is in the audience.
func (a *audience) user(id string) (bool, error) {
	if a.all || a.users[id] {
		return true, nil
	}
	if in, ok := a.memo[id]; ok {
		return in, nil
	}
	u, err := a.tx.User(id)
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	in := u.Role == meta.RoleAdmin
	if !in {
		groups, err := a.tx.GroupsOf(id)
		if err != nil {
			return false, err
		}
		in = slices.ContainsFunc(groups, func(g string) bool { return a.groups[g] })
	}
	a.memo[id] = in
	return in, nil
}

// record reports whether a live global record is the audience's: a user,
// or a token or session of one, or a group; anything else is.
func (a *audience) record(c *meta.Change) (bool, error) {
	switch c.Kind {
	case meta.KindUser:
		return a.user(c.Key)
	case meta.KindToken, meta.KindSession:
		var owned struct {
			UserID string `json:"user_id"`
		}
		if err := json.Unmarshal(c.Value, &owned); err != nil {
			return false, fmt.Errorf("feed: %s record %s: %w", c.Kind, c.Key, err)
		}
		return a.user(owned.UserID)
	case meta.KindGroup:
		return a.groups[c.Key], nil
	}
	return true, nil
}

// principals reads, for a node catching up on whom a change brought into
// its audience, the current records of the named users (with their API
// tokens and sessions) and groups that are in it.
func principals(a *audience, ids []string) ([]meta.Change, error) {
	var out []meta.Change
	for _, id := range ids {
		if c, ok := a.tx.Current(meta.KindGroup, id); ok && a.groups[id] {
			out = append(out, c)
			continue
		}
		u, ok := a.tx.Current(meta.KindUser, id)
		if !ok {
			continue
		}
		if in, err := a.user(id); err != nil || !in {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, u)
		tokens, sessions := a.tx.Credentials(id)
		for _, t := range tokens {
			if c, ok := a.tx.Current(meta.KindToken, t); ok {
				out = append(out, c)
			}
		}
		for _, s := range sessions {
			if c, ok := a.tx.Current(meta.KindSession, s); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}
