package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// ErrBadCredentials means credentials were given and are not valid
// (unknown user, wrong password, expired or revoked token). The message
// deliberately does not say which.
var ErrBadCredentials = errors.New("invalid credentials")

// Viewer is the read side of the metadata store.
type Viewer interface {
	View(func(*meta.Tx) error) error
}

// Authenticator turns presented credentials into a Principal. It only
// reads replicated state, so an edge can run it while the origin is away.
type Authenticator struct {
	Meta  Viewer
	JWT   *JWT
	Cache *CredCache // verified passwords, so Basic auth skips argon2 on a hit
	Now   func() time.Time
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Header authenticates an Authorization header value: "Bearer <jwt or API
// token>", "Basic <b64 user:pass>", or a bare API token (cargo, gem send
// the token as is). An empty header is anonymous: (nil, nil).
func (a *Authenticator) Header(h string) (*Principal, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return nil, nil
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return a.Bearer(rest)
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, ErrBadCredentials
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, ErrBadCredentials
		}
		return a.Basic(user, pass)
	}
	if strings.HasPrefix(h, TokenPrefix) {
		return a.Bearer(h)
	}
	return nil, ErrBadCredentials
}

// Bearer authenticates an access JWT or an API token.
func (a *Authenticator) Bearer(tok string) (*Principal, error) {
	if strings.HasPrefix(tok, TokenPrefix) {
		return a.APIToken(tok)
	}
	if a.JWT == nil || !LooksLikeJWT(tok) {
		return nil, ErrBadCredentials
	}
	if c, err := a.JWT.Parse(tok, AccessToken); err == nil {
		return a.session(c)
	}
	c, err := a.JWT.Parse(tok, RegistryToken)
	if err != nil {
		return nil, ErrBadCredentials
	}
	return a.registry(c)
}

// registry resolves a registry token: its user, and, when it came from an
// API token, that token's scopes (a revoked or expired token ends it).
func (a *Authenticator) registry(c *Claims) (*Principal, error) {
	if c.Subject == anonymousSubject {
		return nil, nil
	}
	var p *Principal
	err := a.Meta.View(func(tx *meta.Tx) error {
		u, err := tx.User(c.Subject)
		if err != nil {
			return ErrBadCredentials
		}
		p = principalOf(u)
		if c.TokenID == "" {
			return nil
		}
		t, err := tx.TokenByID(c.TokenID)
		if err != nil || t.UserID != u.ID || t.Expired(a.now()) {
			return ErrBadCredentials
		}
		scopes, err := ParseScopes(t.Scopes)
		if err != nil {
			return ErrBadCredentials
		}
		p.TokenID, p.Scopes = t.ID, scopes
		return nil
	})
	return p, err
}

// anonymousSubject marks a registry token handed to nobody in particular
// (docker clients want a token even for anonymous pulls); user ids are hex
// and never look like this.
const anonymousSubject = "~anonymous"

// IssueRegistryToken hands p a short-lived registry token carrying the
// same rights; an anonymous p gets an anonymous token.
func (a *Authenticator) IssueRegistryToken(p *Principal, ttl time.Duration) (string, time.Time, error) {
	if p.Anonymous() {
		return a.JWT.IssueFor(RegistryToken, anonymousSubject, "", "", ttl)
	}
	return a.JWT.IssueFor(RegistryToken, p.UserID, "", p.TokenID, ttl)
}

// Session checks that the session a JWT belongs to is still active and
// returns its user.
func (a *Authenticator) session(c *Claims) (*Principal, error) {
	var p *Principal
	err := a.Meta.View(func(tx *meta.Tx) error {
		s, err := tx.Session(c.Session)
		if err != nil || s.UserID != c.Subject || !s.Active(a.now()) {
			return ErrBadCredentials
		}
		u, err := tx.User(c.Subject)
		if err != nil {
			return ErrBadCredentials
		}
		p = principalOf(u)
		p.SessionID = s.ID
		return nil
	})
	return p, err
}

// Refresh validates a refresh JWT and returns its principal (with the
// session id) for issuing a new access token.
func (a *Authenticator) Refresh(tok string) (*Principal, error) {
	if a.JWT == nil || !LooksLikeJWT(tok) {
		return nil, ErrBadCredentials
	}
	c, err := a.JWT.Parse(tok, RefreshToken)
	if err != nil {
		return nil, ErrBadCredentials
	}
	return a.session(c)
}

// APIToken authenticates an API token secret.
func (a *Authenticator) APIToken(secret string) (*Principal, error) {
	hash := HashAPIToken(secret)
	var p *Principal
	err := a.Meta.View(func(tx *meta.Tx) error {
		t, err := tx.TokenByHash(hash)
		if err != nil || t.Expired(a.now()) {
			return ErrBadCredentials
		}
		u, err := tx.User(t.UserID)
		if err != nil {
			return ErrBadCredentials
		}
		scopes, err := ParseScopes(t.Scopes)
		if err != nil {
			return ErrBadCredentials
		}
		p = principalOf(u)
		p.TokenID, p.Scopes = t.ID, scopes
		return nil
	})
	return p, err
}

// Basic authenticates a username with a password or an API token (package
// clients put tokens in the password field; the username must then be the
// token's owner, or anything for clients like twine that send __token__).
func (a *Authenticator) Basic(user, pass string) (*Principal, error) {
	if strings.HasPrefix(pass, TokenPrefix) {
		p, err := a.APIToken(pass)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(user, p.Username) && user != "__token__" && user != "" {
			return nil, ErrBadCredentials
		}
		return p, nil
	}
	return a.Password(user, pass)
}

// Password verifies a username and password. A verified pair is cached
// with the hash it matched, so a password change invalidates the entry.
func (a *Authenticator) Password(user, pass string) (*Principal, error) {
	var u *meta.User
	err := a.Meta.View(func(tx *meta.Tx) error {
		var err error
		u, err = tx.UserByName(user)
		return err
	})
	if err != nil || u.PasswordHash == "" {
		// Spend the time a real check costs, so timing does not reveal
		// which usernames exist.
		VerifyPassword(dummyHash, pass)
		return nil, ErrBadCredentials
	}
	cacheKey := u.ID + "\x00" + pass
	if h, ok := a.Cache.Get(cacheKey); ok && h == u.PasswordHash {
		return principalOf(u), nil
	}
	if !VerifyPassword(u.PasswordHash, pass) {
		return nil, ErrBadCredentials
	}
	a.Cache.Put(cacheKey, u.PasswordHash)
	return principalOf(u), nil
}

// dummyHash is a valid argon2id encoding of a random password.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$DlOzkKY62uF3JHxpEaBi7Q$uDB0XczvSas2U/iVsrFcm5rrKAAoz+HtLfLZx0FKn/8"

func principalOf(u *meta.User) *Principal {
	return &Principal{UserID: u.ID, Username: u.Username, Role: u.Role, MustChangePassword: u.MustChangePassword}
}
