package app

import (
	"cmp"
	"context"
	"slices"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Grants are managed by global administrators and by holders of the admin
// permission on the repository concerned.

// ListPermissions lists the grants p may see, of one repository when
// repoID is set: an administrator every grant, anyone else their own,
// their groups', and those of the repositories they administer.
func (a *App) ListPermissions(_ context.Context, p *auth.Principal, repoID string) ([]meta.Permission, error) {
	var out []meta.Permission
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = permissionsFor(tx, p, repoID); return err })
	if out == nil {
		out = []meta.Permission{}
	}
	return out, err
}

func permissionsFor(tx *meta.Tx, p *auth.Principal, repoID string) ([]meta.Permission, error) {
	groups, err := tx.GroupsOf(p.UserID)
	if err != nil {
		return nil, err
	}
	canAdmin := map[string]bool{}
	var checkErr error // the filter cannot return one
	out, err := tx.Permissions(func(g *meta.Permission) bool {
		if repoID != "" && g.RepositoryID != repoID {
			return false
		}
		if p.IsAdmin() || g.UserID == p.UserID || (g.GroupID != "" && slices.Contains(groups, g.GroupID)) {
			return true
		}
		ok, seen := canAdmin[g.RepositoryID]
		if !seen && checkErr == nil {
			var repo *meta.Repository
			if repo, checkErr = tx.Repo(g.RepositoryID); checkErr == nil {
				ok, checkErr = auth.Can(tx, p, repo, meta.ActionAdmin)
			}
			canAdmin[g.RepositoryID] = ok
		}
		return ok
	})
	return out, cmp.Or(err, checkErr)
}

// NamedPermission is a grant with the names people know its repository
// and its user or group by (the pages show names, not ids).
type NamedPermission struct {
	meta.Permission
	Repository, Username, Group string
}

// ListNamedPermissions is ListPermissions with names: the same grants,
// by the same rule, in repository name order.
func (a *App) ListNamedPermissions(_ context.Context, p *auth.Principal, repoID string) ([]NamedPermission, error) {
	out := []NamedPermission{}
	err := a.view(func(tx *meta.Tx) error {
		perms, err := permissionsFor(tx, p, repoID)
		if err != nil {
			return err
		}
		for _, g := range perms {
			n := NamedPermission{Permission: g}
			repo, err := tx.Repo(g.RepositoryID)
			if err != nil {
				return err
			}
			n.Repository = repo.Name
			if g.UserID != "" {
				u, err := tx.User(g.UserID)
				if err != nil {
					return err
				}
				n.Username = u.Username
			} else {
				grp, err := tx.Group(g.GroupID)
				if err != nil {
					return err
				}
				n.Group = grp.Name
			}
			out = append(out, n)
		}
		return nil
	})
	slices.SortStableFunc(out, func(x, y NamedPermission) int {
		return cmp.Or(cmp.Compare(x.Repository, y.Repository), cmp.Compare(x.Group+"\x00"+x.Username, y.Group+"\x00"+y.Username))
	})
	return out, err
}

// CanManagePermissions reports whether p may grant and revoke on the
// repository (id or name) p may read: an administrator, or a holder of
// its admin permission. A repository p may not read is not found, as
// GetRepository answers.
func (a *App) CanManagePermissions(_ context.Context, p *auth.Principal, ref string) (bool, error) {
	var ok bool
	err := a.view(func(tx *meta.Tx) error {
		repo, err := RepoAccess(tx, p, ref, meta.ActionRead)
		if err != nil {
			return err
		}
		ok, err = auth.Can(tx, p, repo, meta.ActionAdmin)
		return err
	})
	return ok, err
}

// NewPermission grants actions on a repository to one user or one group.
type NewPermission struct {
	RepositoryID, UserID, GroupID string
	Permissions                   []string
}

// CreatePermission grants, when p administers the repository.
func (a *App) CreatePermission(ctx context.Context, p *auth.Principal, in NewPermission) (*meta.Permission, uint64, error) {
	switch {
	case in.RepositoryID == "":
		return nil, 0, apierr.Invalid("repository_id", "repository_id is required")
	case (in.UserID == "") == (in.GroupID == ""):
		return nil, 0, apierr.Invalid("user_id", "give exactly one of user_id and group_id")
	case len(in.Permissions) == 0:
		return nil, 0, apierr.Invalid("permissions", "permissions must list at least one of read, write, delete, admin")
	}
	var actions []string
	for _, act := range in.Permissions {
		if !meta.ValidAction(act) {
			return nil, 0, apierr.Invalid("permissions", "unknown permission %q: use read, write, delete or admin", act)
		}
		if !slices.Contains(actions, act) {
			actions = append(actions, act)
		}
	}
	perm := meta.Permission{ID: a.NewID(), RepositoryID: in.RepositoryID, UserID: in.UserID, GroupID: in.GroupID,
		Permissions: actions, CreatedAt: a.now()}
	idx, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		repo, err := tx.RepoByRef(in.RepositoryID)
		if err != nil {
			return nil, apierr.Invalid("repository_id", "no repository with id or name %q", in.RepositoryID)
		}
		perm.RepositoryID = repo.ID
		if err := mayAdmin(tx, p, repo); err != nil {
			return nil, err
		}
		if in.UserID != "" {
			u, err := tx.UserByRef(in.UserID)
			if err != nil {
				return nil, apierr.Invalid("user_id", "no user with id or username %q", in.UserID)
			}
			perm.UserID = u.ID
		} else {
			g, err := tx.GroupByRef(in.GroupID)
			if err != nil {
				return nil, apierr.Invalid("group_id", "no group with id or name %q", in.GroupID)
			}
			perm.GroupID = g.ID
		}
		return &meta.PermissionCreate{Permission: perm}, nil
	})
	if err != nil {
		return nil, idx, err
	}
	return &perm, idx, nil
}

// DeletePermission revokes a grant, when p administers its repository.
func (a *App) DeletePermission(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	return a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		perm, err := tx.Permission(id)
		if err != nil {
			return nil, err
		}
		repo, err := tx.Repo(perm.RepositoryID)
		if err != nil {
			return nil, err
		}
		if err := mayAdmin(tx, p, repo); err != nil {
			return nil, err
		}
		return &meta.PermissionDelete{ID: id, Repo: repo.ID}, nil
	})
}

func mayAdmin(tx *meta.Tx, p *auth.Principal, repo *meta.Repository) error {
	if ok, err := auth.Can(tx, p, repo, meta.ActionAdmin); err != nil || !ok {
		return cmp.Or(err, error(apierr.New(apierr.Forbidden, "managing permissions of %s needs its admin permission", repo.Name)))
	}
	return nil
}
