package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	users, err := s.app.ListUsers(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]userView, len(users))
	for i := range users {
		out[i] = viewUser(&users[i])
	}
	return writeJSON(w, http.StatusOK, userList{Users: out, Total: len(out)})
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newUserRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	u, idx, err := s.app.CreateUser(r.Context(), p, app.NewUser{Username: req.Username, Email: req.Email, Password: req.Password, Role: req.Role, Source: req.Source})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusCreated, viewUser(u))
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	u, err := s.app.Me(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewUser(u))
}

// updateMe changes the caller's email and/or password (app.UpdateMe).
func (s *Server) updateMe(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req accountRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if s.cfg.DemoMode && (req.Email != nil || req.DisplayName != nil) {
		return errDemoMode() // demo mode lets only a pending password change through
	}
	u, idx, err := s.app.UpdateMe(r.Context(), p, app.AccountChange{Email: req.Email, DisplayName: req.DisplayName, CurrentPassword: req.CurrentPassword, Password: req.Password})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, viewUser(u))
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req userChangeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Disabled == nil {
		return apierr.Invalid("disabled", "give disabled: true or false")
	}
	u, idx, err := s.app.SetUserDisabled(r.Context(), p, r.PathValue("id"), *req.Disabled)
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, viewUser(u))
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteUser(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}
