package app

import (
	"context"
	"regexp"
	"slices"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

var groupNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$`)

// ListGroups lists every group to administrators and, to anyone else, the
// groups they belong to: a group's member list is not everyone's business.
func (a *App) ListGroups(_ context.Context, p *auth.Principal) ([]meta.Group, error) {
	var all []meta.Group
	if err := a.view(func(tx *meta.Tx) error { var err error; all, err = tx.Groups(); return err }); err != nil {
		return nil, err
	}
	groups := []meta.Group{}
	for _, g := range all {
		if p.IsAdmin() || slices.Contains(g.Members, p.UserID) {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// NewGroup is what creating a group takes.
type NewGroup struct {
	Name, Description string
}

// CreateGroup creates an empty group (administrators only).
func (a *App) CreateGroup(ctx context.Context, p *auth.Principal, in NewGroup) (*meta.Group, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if !groupNameRE.MatchString(in.Name) {
		return nil, 0, apierr.Invalid("name", "name must be 1-100 characters: letters, digits, space, '.', '_', '-'")
	}
	if len(in.Description) > 1024 {
		return nil, 0, apierr.Invalid("description", "description is longer than 1024 characters")
	}
	g := meta.Group{ID: a.NewID(), Name: in.Name, Description: in.Description, Members: []string{}, CreatedAt: a.now()}
	idx, err := a.commit(ctx, &meta.GroupCreate{Group: g})
	if err != nil {
		return nil, idx, err
	}
	return &g, idx, nil
}

// AddGroupMembers adds existing users to a group (administrators only).
func (a *App) AddGroupMembers(ctx context.Context, p *auth.Principal, id string, userIDs []string) (*meta.Group, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if len(userIDs) == 0 || len(userIDs) > 1000 {
		return nil, 0, apierr.Invalid("user_ids", "user_ids must list 1 to 1000 user ids")
	}
	ids := make([]string, 0, len(userIDs))
	err := a.view(func(tx *meta.Tx) error {
		g, err := tx.GroupByRef(id)
		if err != nil {
			return err
		}
		id = g.ID
		for _, ref := range userIDs {
			u, err := tx.UserByRef(ref)
			if err != nil {
				return apierr.Invalid("user_ids", "no user with id or username %q", ref)
			}
			ids = append(ids, u.ID)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.GroupAddMembers{GroupID: id, UserIDs: ids})
	if err != nil {
		return nil, idx, err
	}
	var g *meta.Group
	err = a.view(func(tx *meta.Tx) error { var err error; g, err = tx.Group(id); return err })
	return g, idx, err
}

// RemoveGroupMember takes a user (by id or username) out of a group
// (administrators only). A directory that gave the membership gives it
// again at the user's next sign-in or sync.
func (a *App) RemoveGroupMember(ctx context.Context, p *auth.Principal, groupRef, userRef string) (*meta.Group, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	var g *meta.Group
	var userID string
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if g, err = tx.GroupByRef(groupRef); err != nil {
			return err
		}
		u, err := tx.UserByRef(userRef)
		if err != nil {
			return err
		}
		userID = u.ID
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.GroupRemoveMembers{GroupID: g.ID, UserIDs: []string{userID}})
	if err != nil {
		return nil, idx, err
	}
	err = a.view(func(tx *meta.Tx) error { var err error; g, err = tx.Group(g.ID); return err })
	return g, idx, err
}
