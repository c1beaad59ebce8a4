package api

import (
	"net/http"
	"net/mail"
	"regexp"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

func checkUsername(u string) error {
	if !usernameRE.MatchString(u) {
		return apierr.Invalid("username", "username must be 1-64 characters: letters, digits, '.', '_', '@', '-', starting with a letter or digit")
	}
	return nil
}

func checkEmail(e string) error {
	if len(e) > 254 {
		return apierr.Invalid("email", "email is longer than 254 characters")
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || !strings.Contains(e, "@") {
		return apierr.Invalid("email", "email must be a plain address like user@example.com")
	}
	return nil
}

func checkPassword(field, pw string) error {
	if err := auth.ValidatePasswordPolicy(pw); err != nil {
		return apierr.Invalid(field, "%s", err.Error())
	}
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	out := []userView{}
	err := s.view(func(tx *meta.Tx) error {
		users, err := tx.Users()
		for i := range users {
			out = append(out, viewUser(&users[i]))
		}
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"users": out, "total": len(out)})
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req struct {
		Username string    `json:"username"`
		Email    string    `json:"email"`
		Password string    `json:"password"`
		Role     meta.Role `json:"role"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Role == "" {
		req.Role = meta.RoleUser
	}
	if err := checkUsername(req.Username); err != nil {
		return err
	}
	if err := checkEmail(req.Email); err != nil {
		return err
	}
	if err := checkPassword("password", req.Password); err != nil {
		return err
	}
	if !req.Role.Valid() {
		return apierr.Invalid("role", "role must be admin, user or viewer")
	}
	hash, err := s.d.Authn.Hasher.Hash(r.Context(), req.Password)
	if err != nil {
		return err
	}
	now := s.d.Now().UTC()
	u := meta.User{ID: s.d.NewID(), Username: req.Username, Email: req.Email, Role: req.Role, PasswordHash: hash,
		Source: "local", CreatedAt: now, UpdatedAt: now}
	if err := s.apply(r.Context(), w, &meta.UserCreate{User: u}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, viewUser(&u))
}

func (s *Server) me(p *auth.Principal) (*meta.User, error) {
	var u *meta.User
	err := s.view(func(tx *meta.Tx) error {
		var err error
		u, err = tx.User(p.UserID)
		return err
	})
	return u, err
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	u, err := s.me(p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewUser(u))
}

// updateMe changes the caller's email and/or password. A password change
// needs the current password, clears the forced-change flag and signs out
// every other session of the user.
func (s *Server) updateMe(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		Email           *string `json:"email"`
		CurrentPassword string  `json:"current_password"`
		Password        *string `json:"password"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if s.cfg.DemoMode && req.Email != nil {
		return errDemoMode() // demo mode lets only a pending password change through
	}
	if p.TokenID != "" && req.Password != nil {
		return apierr.New(apierr.Forbidden, "an API token cannot change the password; sign in with the password")
	}
	if req.Email == nil && req.Password == nil {
		return apierr.Invalid("password", "nothing to update: give email and/or password")
	}
	if p.MustChangePassword && req.Password == nil {
		return apierr.New(apierr.PasswordChangeRequired, "the initial password must be changed first").With("field", "password")
	}
	u, err := s.me(p)
	if err != nil {
		return err
	}
	cmd := &meta.UserUpdate{ID: u.ID, At: s.d.Now().UTC()}
	if req.Email != nil {
		if err := checkEmail(*req.Email); err != nil {
			return err
		}
		cmd.Email = req.Email
	}
	if req.Password != nil {
		if u.Source != "" && u.Source != "local" {
			return apierr.New(apierr.Forbidden, "the password of a %s account is managed by its directory", u.Source)
		}
		if req.CurrentPassword == "" {
			return apierr.Invalid("current_password", "current_password is required to change the password")
		}
		if ok, err := s.d.Authn.Hasher.Verify(r.Context(), u.PasswordHash, req.CurrentPassword); err != nil {
			return err
		} else if !ok {
			return apierr.Invalid("current_password", "current_password is not correct")
		}
		if err := checkPassword("password", *req.Password); err != nil {
			return err
		}
		if *req.Password == req.CurrentPassword {
			return apierr.Invalid("password", "the new password must differ from the current one")
		}
		hash, err := s.d.Authn.Hasher.Hash(r.Context(), *req.Password)
		if err != nil {
			return err
		}
		no := false
		cmd.PasswordHash, cmd.MustChangePassword = &hash, &no
		cmd.RevokeSessions, cmd.KeepSession = true, p.SessionID
	}
	if err := s.apply(r.Context(), w, cmd); err != nil {
		return err
	}
	if u, err = s.me(p); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewUser(u))
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	if id == p.UserID {
		return apierr.New(apierr.Conflict, "you cannot delete your own account")
	}
	// The command keeps the last administrator (meta.ErrLastAdmin, 409):
	// only the log's order can tell which of two concurrent deletes is
	// the second.
	return s.applyNoContent(r.Context(), w, &meta.UserDelete{ID: id})
}
