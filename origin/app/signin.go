package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Sign-in: a user's password buys a login session (revocable, replicated)
// and a pair of tokens signed for it, a short-lived access token and a
// refresh token that lives as long as the session.

// TokenPair is what a sign-in answers.
type TokenPair struct {
	AccessToken            string `json:"access_token"`
	RefreshToken           string `json:"refresh_token,omitempty"`
	ExpiresIn              int64  `json:"expires_in"`
	TokenType              string `json:"token_type"`
	PasswordChangeRequired bool   `json:"password_change_required,omitempty"`
}

// Credentials are what a user signs in with.
type Credentials struct {
	Username, Password string
}

// Check bounds the credentials before anything is done with them (a
// limiter's key, a lookup, an audit line).
func (c Credentials) Check() error {
	if c.Username == "" || len(c.Username) > auth.MaxUsernameBytes {
		return apierr.Invalid("username", "username is required (at most %d bytes)", auth.MaxUsernameBytes)
	}
	if c.Password == "" || len(c.Password) > auth.MaxSecretBytes {
		return apierr.Invalid("password", "password is required (at most %d bytes)", auth.MaxSecretBytes)
	}
	return nil
}

// SignIn checks credentials (from the client at address remote) and
// opens a login session. It returns who signed in, for the transport's
// audit; a refused sign-in is audited by the authenticator, like a
// refusal on any path.
func (a *App) SignIn(ctx context.Context, c Credentials, remote string) (*TokenPair, *auth.Principal, uint64, error) {
	if err := c.Check(); err != nil {
		return nil, nil, 0, err
	}
	p, err := a.Authn.Login(ctx, c.Username, c.Password, remote)
	if errors.Is(err, auth.ErrBadCredentials) {
		return nil, nil, 0, apierr.New(apierr.Unauthorized, "invalid username or password")
	}
	if err != nil {
		return nil, nil, 0, err
	}
	now := a.now()
	sess := meta.Session{ID: a.NewID(), UserID: p.UserID, CreatedAt: now, ExpiresAt: now.Add(a.RefreshTTL)}
	idx, err := a.commit(ctx, &meta.SessionCreate{Session: sess})
	if err != nil {
		return nil, nil, idx, err
	}
	pair, err := a.issue(p.UserID, sess.ID, true)
	if err != nil {
		return nil, nil, idx, err
	}
	pair.PasswordChangeRequired = p.MustChangePassword
	return pair, p, idx, nil
}

// Refresh issues a new access token for the session a refresh token
// belongs to, while the session lives.
func (a *App) Refresh(_ context.Context, refreshToken string) (*TokenPair, error) {
	if refreshToken == "" {
		return nil, apierr.Invalid("refresh_token", "refresh_token is required")
	}
	p, err := a.Authn.Refresh(refreshToken)
	if err != nil {
		return nil, apierr.New(apierr.Unauthorized, "refresh token is invalid, expired or revoked")
	}
	return a.issue(p.UserID, p.SessionID, false)
}

// SignOut ends the caller's login session (its tokens stop at every node).
func (a *App) SignOut(ctx context.Context, p *auth.Principal) (uint64, error) {
	if p.SessionID == "" {
		return 0, apierr.New(apierr.BadRequest, "logout ends a login session; revoke an API token with DELETE /api/v1/users/me/tokens/{id}")
	}
	return a.commit(ctx, &meta.SessionRevoke{ID: p.SessionID, At: a.now()})
}

func (a *App) issue(userID, sessionID string, withRefresh bool) (*TokenPair, error) {
	access, _, err := a.Authn.JWT.Issue(auth.AccessToken, userID, sessionID, a.AccessTTL)
	if err != nil {
		return nil, fmt.Errorf("issuing an access token: %w", err)
	}
	pair := &TokenPair{AccessToken: access, ExpiresIn: int64(a.AccessTTL / time.Second), TokenType: "Bearer"}
	if withRefresh {
		if pair.RefreshToken, _, err = a.Authn.JWT.Issue(auth.RefreshToken, userID, sessionID, a.RefreshTTL); err != nil {
			return nil, fmt.Errorf("issuing a refresh token: %w", err)
		}
	}
	return pair, nil
}
