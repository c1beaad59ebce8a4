package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) listPermissions(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	out, err := s.app.ListPermissions(r.Context(), p, r.URL.Query().Get("repository_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, permissionList{Permissions: out, Total: len(out)})
}

func (s *Server) createPermission(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newPermissionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	perm, idx, err := s.app.CreatePermission(r.Context(), p, app.NewPermission{RepositoryID: req.RepositoryID,
		UserID: req.UserID, GroupID: req.GroupID, Permissions: req.Permissions})
	return written(w, idx, err, http.StatusCreated, perm)
}

func (s *Server) deletePermission(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeletePermission(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}
