package app

import (
	"context"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// NewToken is what creating an API token takes.
type NewToken struct {
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
}

// CreateToken makes an API token for the caller and returns it with its
// secret, shown this once (the store keeps its hash).
func (a *App) CreateToken(ctx context.Context, p *auth.Principal, in NewToken) (*meta.Token, string, uint64, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return nil, "", 0, apierr.Invalid("name", "name is required (at most 100 characters)")
	}
	scopes, err := auth.ParseScopes(in.Scopes)
	if err != nil {
		return nil, "", 0, apierr.Invalid("scopes", "%s", err.Error())
	}
	if auth.AllowsGlobalAdmin(scopes) && p.Role != meta.RoleAdmin {
		return nil, "", 0, apierr.Invalid("scopes", "only administrators can create tokens with the admin scope")
	}
	now := a.now()
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return nil, "", 0, apierr.Invalid("expires_at", "expires_at must be in the future")
	}
	secret, hash, err := auth.NewAPIToken()
	if err != nil {
		return nil, "", 0, err
	}
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = sc.String()
	}
	t := meta.Token{ID: a.NewID(), UserID: p.UserID, Name: name, Scopes: names, Hash: hash,
		Hint: secret[:len(auth.TokenPrefix)+4], CreatedAt: now}
	if in.ExpiresAt != nil {
		exp := in.ExpiresAt.UTC()
		t.ExpiresAt = &exp
	}
	idx, err := a.commit(ctx, &meta.TokenCreate{Token: t})
	if err != nil {
		return nil, "", idx, err
	}
	return &t, secret, idx, nil
}

// ListTokens lists the caller's API tokens, oldest first.
func (a *App) ListTokens(_ context.Context, p *auth.Principal) ([]meta.Token, error) {
	var toks []meta.Token
	err := a.view(func(tx *meta.Tx) error { var err error; toks, err = tx.TokensOf(p.UserID); return err })
	return toks, err
}

// RevokeToken revokes one of the caller's API tokens.
func (a *App) RevokeToken(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	// Managing tokens needs the account (see auth.Principal.ManagesAccount),
	// except that any API token may revoke itself: giving up a credential
	// grants nothing (a signed-in tool's logout).
	if !p.ManagesAccount() && (p.Via != auth.CredAPIToken || p.TokenID != id) {
		return 0, apierr.New(apierr.Forbidden, "managing the account needs a login session or password (or an admin-scoped token); "+
			"this API token acts on repositories only, and may revoke only itself")
	}
	return a.commit(ctx, &meta.TokenRevoke{ID: id, UserID: p.UserID})
}
