package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
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
	pair, idx, err := a.openSession(ctx, p)
	return pair, p, idx, err
}

// openSession opens a login session for p and issues its tokens.
func (a *App) openSession(ctx context.Context, p *auth.Principal) (*TokenPair, uint64, error) {
	now := a.now()
	sess := meta.Session{ID: a.NewID(), UserID: p.UserID, CreatedAt: now, ExpiresAt: now.Add(a.RefreshTTL)}
	idx, err := a.commit(ctx, &meta.SessionCreate{Session: sess})
	if err != nil {
		return nil, idx, err
	}
	pair, err := a.issue(p.UserID, sess.ID, true)
	if err != nil {
		return nil, idx, err
	}
	pair.PasswordChangeRequired = p.MustChangePassword
	return pair, idx, nil
}

// OIDC is an identity provider's sign-in flow (shared/auth/oidc): Begin
// gives the provider's URL to send the browser to and the flow cookie to
// set; Finish checks the callback and says who signed in. Its errors are
// client errors (apierr) for a flow to start again or a provider that
// cannot be reached.
type OIDC interface {
	Begin(ctx context.Context, base, next string) (redirect, cookie string, err error)
	Finish(ctx context.Context, q url.Values, cookie string) (id *auth.Identity, next string, err error)
}

func (a *App) oidc() error {
	if a.OIDC == nil {
		return apierr.New(apierr.NotFound, "single sign-on (OIDC) is not configured on this server")
	}
	return nil
}

// OIDCBegin starts a single sign-on for a browser that reached Depot at
// base (scheme://host, an edge's or an origin's): where to send the
// browser, and the flow cookie. next is a page of the web UI to return
// to ("" for an API client, which gets the tokens in the callback's body).
func (a *App) OIDCBegin(ctx context.Context, base, next string) (redirect, cookie string, err error) {
	if err := a.oidc(); err != nil {
		return "", "", err
	}
	return a.OIDC.Begin(ctx, base, next)
}

// OIDCSignIn is a single sign-on completed: the session's tokens, who
// signed in, the log index of the session, and where the flow began
// (Next: the web UI page, "" for an API client).
type OIDCSignIn struct {
	Pair      *TokenPair
	Principal *auth.Principal
	Index     uint64
	Next      string
}

// OIDCFinish completes a single sign-on at the callback: the user the
// provider vouches for is created or brought up to date (as a directory
// user: role and groups from its groups claim) and gets a login session,
// unless an administrator disabled it (Forbidden: the provider's word
// does not enable a user again).
//
// The answer's Next is set whenever the flow cookie was one this cluster
// made, also with an error, so the web UI shows its own refusals.
func (a *App) OIDCFinish(ctx context.Context, q url.Values, cookie string) (OIDCSignIn, error) {
	var out OIDCSignIn
	if err := a.oidc(); err != nil {
		return out, err
	}
	id, next, err := a.OIDC.Finish(ctx, q, cookie)
	out.Next = next
	if err != nil {
		return out, err
	}
	u, _, err := a.provision(ctx, id)
	if errors.Is(err, auth.ErrBadCredentials) {
		return out, apierr.New(apierr.Forbidden, "%s cannot sign in with single sign-on: the name belongs to another kind of user here", id.Username)
	}
	if err != nil {
		return out, err
	}
	if u.Disabled {
		return out, apierr.New(apierr.Forbidden, "%s is disabled here: an administrator enables the account again", u.Username)
	}
	out.Principal = &auth.Principal{UserID: u.ID, Username: u.Username, Role: u.Role, Via: auth.CredSession}
	out.Pair, out.Index, err = a.openSession(ctx, out.Principal)
	return out, err
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
