package api

import (
	"net/http"
	"regexp"
	"slices"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

var groupNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$`)

// listGroups shows every group to admins and, to anyone else, the groups
// they belong to: the member list of a group is not everyone's business.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var all []meta.Group
	if err := s.view(func(tx *meta.Tx) error { var err error; all, err = tx.Groups(); return err }); err != nil {
		return err
	}
	groups := []meta.Group{}
	for _, g := range all {
		if p.IsAdmin() || slices.Contains(g.Members, p.UserID) {
			groups = append(groups, g)
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"groups": groups, "total": len(groups)})
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if !groupNameRE.MatchString(req.Name) {
		return apierr.Invalid("name", "name must be 1-100 characters: letters, digits, space, '.', '_', '-'")
	}
	if len(req.Description) > 1024 {
		return apierr.Invalid("description", "description is longer than 1024 characters")
	}
	g := meta.Group{ID: s.d.NewID(), Name: req.Name, Description: req.Description, Members: []string{}, CreatedAt: s.d.Now().UTC()}
	if err := s.apply(r.Context(), w, &meta.GroupCreate{Group: g}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, g)
}

func (s *Server) addGroupMembers(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req struct {
		UserIDs []string `json:"user_ids"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.UserIDs) == 0 || len(req.UserIDs) > 1000 {
		return apierr.Invalid("user_ids", "user_ids must list 1 to 1000 user ids")
	}
	id := r.PathValue("id")
	err := s.view(func(tx *meta.Tx) error {
		if _, err := tx.Group(id); err != nil {
			return err
		}
		for _, u := range req.UserIDs {
			if _, err := tx.User(u); err != nil {
				return apierr.Invalid("user_ids", "no user with id %q", u)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.apply(r.Context(), w, &meta.GroupAddMembers{GroupID: id, UserIDs: req.UserIDs}); err != nil {
		return err
	}
	var g *meta.Group
	if err := s.view(func(tx *meta.Tx) error { var err error; g, err = tx.Group(id); return err }); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, g)
}
