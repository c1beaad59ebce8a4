package app

import (
	"context"
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

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

// checkDisplayName refuses a display name a person would not type: too
// long, not UTF-8, or with control characters.
func checkDisplayName(s string) error {
	if len(s) > meta.MaxDisplayName {
		return apierr.Invalid("display_name", "display_name is longer than %d bytes", meta.MaxDisplayName)
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 || strings.TrimSpace(s) != s {
		return apierr.Invalid("display_name", "display_name must be plain text on one line, without leading or trailing spaces")
	}
	return nil
}

// cleanDisplayName makes a directory's or provider's name one the checks
// accept: valid UTF-8, no control characters, trimmed and bounded.
func cleanDisplayName(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	for len(s) > meta.MaxDisplayName {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return strings.TrimSpace(s)
}

func checkPassword(field, pw string) error {
	if err := auth.ValidatePasswordPolicy(pw); err != nil {
		return apierr.Invalid(field, "%s", err.Error())
	}
	return nil
}

// ListUsers lists every user, in name order (administrators only).
func (a *App) ListUsers(_ context.Context, p *auth.Principal) ([]meta.User, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var users []meta.User
	err := a.view(func(tx *meta.Tx) error { var err error; users, err = tx.Users(); return err })
	return users, err
}

// NewUser is what creating a local user takes (Role "" is user).
// MustChangePassword makes the password an initial one, to be changed
// at the first sign-in before anything else (the web UI's creation sets
// it; POST /users does not).
type NewUser struct {
	Username, Email, Password string
	Role                      meta.Role
	MustChangePassword        bool
	// Source is where the user signs in: local (the default, with
	// Password), or a directory (ldap, oidc; no password here).
	Source string
}

// CreateUser creates a user (administrators only): a local one with a
// password, or a directory's (ldap, oidc) before their first sign-in,
// so that grants and group memberships can be given ahead; their first
// sign-in through the directory finds the user, and the directory then
// decides their role and directory groups, as for any directory user.
func (a *App) CreateUser(ctx context.Context, p *auth.Principal, in NewUser) (*meta.User, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if in.Role == "" {
		in.Role = meta.RoleUser
	}
	if err := checkUsername(in.Username); err != nil {
		return nil, 0, err
	}
	if err := checkEmail(in.Email); err != nil {
		return nil, 0, err
	}
	if !in.Role.Valid() {
		return nil, 0, apierr.Invalid("role", "role must be admin, user or viewer")
	}
	switch in.Source {
	case "", meta.SourceLocal:
	case meta.SourceLDAP, meta.SourceOIDC:
		if in.Password != "" {
			return nil, 0, apierr.Invalid("password", "a %s user has no password here: they sign in with the directory's", in.Source)
		}
		u := meta.User{ID: a.NewID(), Username: in.Username, Email: in.Email, Role: in.Role, Source: in.Source}
		idx, err := a.commit(ctx, &meta.UserProvision{User: u, At: a.now()})
		if err != nil {
			return nil, idx, err
		}
		var made *meta.User
		err = a.view(func(tx *meta.Tx) error { made, err = tx.User(u.ID); return err })
		return made, idx, err
	default:
		return nil, 0, apierr.Invalid("source", "source must be local, ldap or oidc")
	}
	if err := checkPassword("password", in.Password); err != nil {
		return nil, 0, err
	}
	hash, err := a.Hasher.Hash(ctx, in.Password)
	if err != nil {
		return nil, 0, err
	}
	now := a.now()
	u := meta.User{ID: a.NewID(), Username: in.Username, Email: in.Email, Role: in.Role, PasswordHash: hash,
		MustChangePassword: in.MustChangePassword, Source: "local", CreatedAt: now, UpdatedAt: now}
	idx, err := a.commit(ctx, &meta.UserCreate{User: u})
	if err != nil {
		return nil, idx, err
	}
	return &u, idx, nil
}

// Me is the caller's own account.
func (a *App) Me(_ context.Context, p *auth.Principal) (*meta.User, error) {
	var u *meta.User
	err := a.view(func(tx *meta.Tx) error {
		var err error
		u, err = tx.User(p.UserID)
		return err
	})
	return u, err
}

// AccountChange is what a user may change of their own account: the
// email, the display name (a directory's user: until the directory's
// next word on it), and the password (with the current one).
type AccountChange struct {
	Email           *string
	DisplayName     *string
	CurrentPassword string
	Password        *string
}

// UpdateMe changes the caller's email, display name and/or password. A password change
// needs the current password, clears the forced-change flag and signs out
// every other session of the user.
func (a *App) UpdateMe(ctx context.Context, p *auth.Principal, in AccountChange) (*meta.User, uint64, error) {
	switch {
	case p.TokenID != "" && in.Password != nil:
		return nil, 0, apierr.New(apierr.Forbidden, "an API token cannot change the password; sign in with the password")
	case in.Email == nil && in.Password == nil && in.DisplayName == nil:
		return nil, 0, apierr.Invalid("password", "nothing to update: give email, display_name and/or password")
	case p.MustChangePassword && in.Password == nil:
		return nil, 0, apierr.New(apierr.PasswordChangeRequired, "the initial password must be changed first").With("field", "password")
	}
	u, err := a.Me(ctx, p)
	if err != nil {
		return nil, 0, err
	}
	cmd := &meta.UserUpdate{ID: u.ID, At: a.now()}
	if in.Email != nil {
		if err := checkEmail(*in.Email); err != nil {
			return nil, 0, err
		}
		cmd.Email = in.Email
	}
	if in.Password != nil {
		if u.Source != "" && u.Source != "local" {
			return nil, 0, apierr.New(apierr.Forbidden, "the password of a %s account is managed by its directory", u.Source)
		}
		if in.CurrentPassword == "" {
			return nil, 0, apierr.Invalid("current_password", "current_password is required to change the password")
		}
		if ok, err := a.Hasher.Verify(ctx, u.PasswordHash, in.CurrentPassword); err != nil {
			return nil, 0, err
		} else if !ok {
			return nil, 0, apierr.Invalid("current_password", "current_password is not correct")
		}
		if err := checkPassword("password", *in.Password); err != nil {
			return nil, 0, err
		}
		if *in.Password == in.CurrentPassword {
			return nil, 0, apierr.Invalid("password", "the new password must differ from the current one")
		}
		hash, err := a.Hasher.Hash(ctx, *in.Password)
		if err != nil {
			return nil, 0, err
		}
		no := false
		cmd.PasswordHash, cmd.MustChangePassword = &hash, &no
		cmd.RevokeSessions, cmd.KeepSession = true, p.SessionID
	}
	if in.DisplayName != nil {
		if err := checkDisplayName(*in.DisplayName); err != nil {
			return nil, 0, err
		}
	}
	var idx uint64
	if in.DisplayName != nil && *in.DisplayName != u.DisplayName {
		// First: its own command, refused whole by a cluster part-way
		// through an upgrade, before anything else is written.
		if idx, err = a.commit(ctx, &meta.UserDisplayName{ID: u.ID, DisplayName: *in.DisplayName, At: a.now()}); err != nil {
			return nil, idx, err
		}
	}
	if in.Email == nil && in.Password == nil {
		u, err = a.Me(ctx, p)
		return u, idx, err
	}
	// A new password was decided from the current one checked against the
	// hash read above: it is committed only while that is still the
	// user's.
	idx, err = a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		now, err := tx.User(p.UserID)
		if err != nil {
			return nil, err
		}
		if in.Password != nil && now.PasswordHash != u.PasswordHash {
			return nil, apierr.New(apierr.Conflict, "the password was changed meanwhile; sign in again with the new one")
		}
		return cmd, nil
	})
	if err != nil {
		return nil, idx, err
	}
	u, err = a.Me(ctx, p)
	return u, idx, err
}

// SetUserDisabled disables a user, or enables one again (administrators
// only; not oneself). Disabling ends the user's sessions and revokes its
// API tokens at once, here and at edges; the password is refused until
// an administrator enables the user again (the directory does not).
func (a *App) SetUserDisabled(ctx context.Context, p *auth.Principal, ref string, disabled bool) (*meta.User, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	var u *meta.User
	if err := a.view(func(tx *meta.Tx) error { var err error; u, err = tx.UserByRef(ref); return err }); err != nil {
		return nil, 0, err
	}
	if u.ID == p.UserID && disabled {
		return nil, 0, apierr.New(apierr.Conflict, "you cannot disable your own account")
	}
	idx, err := a.commit(ctx, &meta.UserDisable{ID: u.ID, Disabled: disabled, By: meta.DisabledByAdmin, At: a.now()})
	if err != nil {
		return nil, idx, err
	}
	err = a.view(func(tx *meta.Tx) error { var err error; u, err = tx.User(u.ID); return err })
	return u, idx, err
}

// DeleteUser deletes a user, with their tokens, sessions and grants
// (administrators only; never oneself, never the last administrator).
func (a *App) DeleteUser(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	if id == p.UserID {
		return 0, apierr.New(apierr.Conflict, "you cannot delete your own account")
	}
	// The command keeps the last administrator (meta.ErrLastAdmin, 409):
	// only the log's order can tell which of two concurrent deletes is
	// the second.
	return a.commit(ctx, &meta.UserDelete{ID: id})
}
