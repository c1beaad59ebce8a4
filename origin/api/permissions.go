package api

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Grants are managed by global admins and by holders of the admin
// permission on the repository concerned.

func (s *Server) listPermissions(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	repoFilter := r.URL.Query().Get("repository_id")
	var out []meta.Permission
	err := s.view(func(tx *meta.Tx) error {
		groups, err := tx.GroupsOf(p.UserID)
		if err != nil {
			return err
		}
		canAdmin := map[string]bool{}
		var checkErr error // the filter cannot return one
		out, err = tx.Permissions(func(g *meta.Permission) bool {
			if repoFilter != "" && g.RepositoryID != repoFilter {
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
		return cmp.Or(err, checkErr)
	})
	if err != nil {
		return err
	}
	if out == nil {
		out = []meta.Permission{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"permissions": out, "total": len(out)})
}

func (s *Server) createPermission(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		RepositoryID string   `json:"repository_id"`
		UserID       string   `json:"user_id"`
		GroupID      string   `json:"group_id"`
		Permissions  []string `json:"permissions"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.RepositoryID == "" {
		return apierr.Invalid("repository_id", "repository_id is required")
	}
	if (req.UserID == "") == (req.GroupID == "") {
		return apierr.Invalid("user_id", "give exactly one of user_id and group_id")
	}
	if len(req.Permissions) == 0 {
		return apierr.Invalid("permissions", "permissions must list at least one of read, write, delete, admin")
	}
	var actions []string
	for _, a := range req.Permissions {
		if !meta.ValidAction(a) {
			return apierr.Invalid("permissions", "unknown permission %q: use read, write, delete or admin", a)
		}
		if !slices.Contains(actions, a) {
			actions = append(actions, a)
		}
	}
	err := s.view(func(tx *meta.Tx) error {
		repo, err := tx.Repo(req.RepositoryID)
		if err != nil {
			return apierr.Invalid("repository_id", "no repository with id %q", req.RepositoryID)
		}
		if ok, err := auth.Can(tx, p, repo, meta.ActionAdmin); err != nil || !ok {
			return cmp.Or(err, error(apierr.New(apierr.Forbidden, "managing permissions of %s needs its admin permission", repo.Name)))
		}
		if req.UserID != "" {
			if _, err := tx.User(req.UserID); err != nil {
				return apierr.Invalid("user_id", "no user with id %q", req.UserID)
			}
		} else if _, err := tx.Group(req.GroupID); err != nil {
			return apierr.Invalid("group_id", "no group with id %q", req.GroupID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	perm := meta.Permission{ID: s.d.NewID(), RepositoryID: req.RepositoryID, UserID: req.UserID, GroupID: req.GroupID,
		Permissions: actions, CreatedAt: s.d.Now().UTC()}
	if err := s.apply(r.Context(), w, &meta.PermissionCreate{Permission: perm}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, perm)
}

func (s *Server) deletePermission(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	err := s.view(func(tx *meta.Tx) error {
		perm, err := tx.Permission(id)
		if err != nil {
			return err
		}
		repo, err := tx.Repo(perm.RepositoryID)
		if err != nil {
			return err
		}
		if ok, err := auth.Can(tx, p, repo, meta.ActionAdmin); err != nil || !ok {
			return cmp.Or(err, error(apierr.New(apierr.Forbidden, "managing permissions of %s needs its admin permission", repo.Name)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.applyNoContent(r.Context(), w, &meta.PermissionDelete{ID: id})
}
