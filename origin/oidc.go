package origin

// Single sign-on with an OpenID provider: its settings, and the
// application's flow over shared/auth/oidc. Origins only: an edge
// forwards the flow's requests to an origin.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"net/url"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/auth/oidc"
	"github.com/depot-registry/depot/shared/config"
)

// OIDCConfig is the OpenID provider users sign in with; empty issuer:
// none.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret, RedirectURI, Scopes string
	UsernameClaim, EmailClaim, NameClaim, GroupsClaim   string
	DefaultRole, RoleGroups, GroupMap                   string
}

func (c *OIDCConfig) bind(s *config.Set) {
	s.Group("Single sign-on (OIDC)")
	s.String(&c.Issuer, "oidc-issuer", "OIDC_ISSUER", "OpenID provider users sign in with (its issuer URL; empty: no single sign-on)")
	s.String(&c.ClientID, "oidc-client-id", "OIDC_CLIENT_ID", "Depot's client id at the provider")
	s.String(&c.ClientSecret, "", "OIDC_CLIENT_SECRET", "Depot's client secret at the provider")
	s.String(&c.RedirectURI, "oidc-redirect-uri", "OIDC_REDIRECT_URI", "<Depot's URL>/api/v1/auth/oidc/callback, as registered at the provider; comma-separated, one per address browsers use (the balancer's, each edge's): the flow returns to the one on the address it began at, else the first")
	s.String(&c.Scopes, "oidc-scopes", "OIDC_SCOPES", "scopes asked for, comma-separated (openid always)")
	s.String(&c.UsernameClaim, "oidc-username-claim", "OIDC_USERNAME_CLAIM", "claim naming the user")
	s.String(&c.EmailClaim, "oidc-email-claim", "OIDC_EMAIL_CLAIM", "claim holding the user's email")
	s.String(&c.NameClaim, "oidc-name-claim", "OIDC_NAME_CLAIM", "claim holding the user's full name")
	s.String(&c.GroupsClaim, "oidc-groups-claim", "OIDC_GROUPS_CLAIM", "claim listing the user's groups")
	s.String(&c.DefaultRole, "oidc-default-role", "DEPOT_OIDC_DEFAULT_ROLE", "role of a single sign-on user no group gives one: admin, user or viewer")
	s.String(&c.RoleGroups, "oidc-role-groups", "DEPOT_OIDC_ROLE_GROUPS", "roles the members of the provider's groups get, e.g. admin=depot-admins (the highest wins)")
	s.String(&c.GroupMap, "oidc-group-map", "DEPOT_OIDC_GROUP_MAP", "Depot group names for the provider's groups, e.g. devs=developers; others keep their name")
}

// provider is the OpenID provider of c (nil when none is set); the flow
// cookie's key comes from the JWT secret every origin shares.
func (c *OIDCConfig) provider(secret []byte) (*oidc.Provider, error) {
	if c.Issuer == "" {
		return nil, nil
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("depot oidc flow key"))
	var scopes []string
	for _, sc := range strings.Split(c.Scopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" {
			scopes = append(scopes, sc)
		}
	}
	var redirects []string
	for _, r := range strings.Split(c.RedirectURI, ",") {
		if r = strings.TrimSpace(r); r != "" {
			redirects = append(redirects, r)
		}
	}
	return oidc.New(oidc.Config{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURLs: redirects,
		Scopes: scopes, UsernameClaim: c.UsernameClaim, EmailClaim: c.EmailClaim, NameClaim: c.NameClaim,
		GroupsClaim: c.GroupsClaim, Key: mac.Sum(nil)})
}

func (c *OIDCConfig) policy() (app.DirectoryPolicy, error) {
	return policy("--oidc", c.DefaultRole, c.RoleGroups, c.GroupMap)
}

// oidcFlow is the application's OIDC over shared/auth/oidc, its errors
// the client's.
type oidcFlow struct{ p *oidc.Provider }

func (f oidcFlow) Begin(ctx context.Context, base, next string) (string, string, error) {
	redirect, cookie, err := f.p.Begin(ctx, base, next)
	return redirect, cookie, clientError(err)
}

func (f oidcFlow) Finish(ctx context.Context, q url.Values, cookie string) (*auth.Identity, string, error) {
	id, next, err := f.p.Finish(ctx, q, cookie)
	return id, next, clientError(err)
}

func clientError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, oidc.ErrFlow):
		return apierr.New(apierr.BadRequest, "%s", err.Error())
	case errors.Is(err, oidc.ErrUnavailable):
		return apierr.New(apierr.Unavailable, "%s; retry later", err.Error()).With(apierr.RetryAfter, 5)
	}
	return err
}
