package oci

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// The docker token flow. A registry token carries exactly the granted
// subset of the scope it was asked for (the token spec's access claim),
// lives only as long as the credential it came from, and is accepted on
// /v2 only. Every request is still authorised against the caller's
// grants; the token's access narrows that further.

// ping answers GET /v2/. An anonymous caller is challenged even though
// public repositories need no credentials: a 200 here would make
// `docker login` succeed without checking the password.
func (f *Format) ping(_ context.Context, r *format.Request) (*format.Response, error) {
	if r.Principal.Anonymous() {
		return nil, format.Unauthorized()
	}
	return format.JSON(http.StatusOK, map[string]any{}), nil
}

type tokenResponse struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
}

// maxScopes bounds the scopes one token request may ask for.
const maxScopes = 32

// token is the realm: Basic credentials, a session or API token (checked
// by the transport; bad ones never get here) or none, for an anonymous
// token that reads public repositories. Asking for more than one may do
// is not an error: the token carries what is granted. No refresh_token:
// docker would then insist on POST.
func (f *Format) token(_ context.Context, r *format.Request) (*format.Response, error) {
	if f.Env.Tokens == nil {
		return nil, errf(http.StatusNotFound, codeUnsupported, "registry tokens are not issued here")
	}
	scopes := r.Query["scope"]
	if len(scopes) > maxScopes {
		return nil, errf(http.StatusBadRequest, codeUnsupported, "at most %d scopes per token", maxScopes)
	}
	grant := auth.RegistryGrant{Audience: Name, Access: []auth.Access{}}
	for _, s := range scopes {
		// A client may join several scopes with spaces in one parameter.
		for _, one := range strings.Fields(s) {
			if a, ok := f.grant(r, one); ok && len(grant.Access) < maxScopes {
				grant.Access = append(grant.Access, a)
			}
		}
	}
	tok, exp, err := f.Env.Tokens.IssueRegistryToken(r.Principal, grant, TokenTTL)
	switch {
	case errors.Is(err, auth.ErrPasswordChange):
		return nil, format.Forbidden("the password of %s must be changed before it can be used here", r.Principal.Name())
	case errors.Is(err, auth.ErrBadCredentials):
		// A registry token cannot buy its successor.
		return nil, format.Unauthorized()
	case err != nil:
		return nil, err
	}
	issued := exp.Add(-TokenTTL)
	resp := format.JSON(http.StatusOK, tokenResponse{Token: tok, AccessToken: tok,
		ExpiresIn: int(TokenTTL / time.Second), IssuedAt: issued.UTC().Format(time.RFC3339)})
	resp.Header.Set("Cache-Control", "no-store")
	return resp, nil
}

// grant is the part of one requested scope the caller may have.
func (f *Format) grant(r *format.Request, scope string) (auth.Access, bool) {
	want, ok := auth.ParseAccessScope(scope)
	if !ok {
		return auth.Access{}, false
	}
	if want.Type == "registry" && want.Name == "catalog" {
		// The catalog lists only what the caller may read.
		return auth.Access{Type: "registry", Name: "catalog", Actions: []string{"*"}}, !r.Principal.Anonymous()
	}
	n, err := ParseName(want.Name)
	if want.Type != "repository" || err != nil {
		return auth.Access{}, false
	}
	got := auth.Access{Type: want.Type, Name: n.String()}
	for _, act := range []string{actionPull, actionPush, actionDelete} {
		if !slices.Contains(want.Actions, act) && !slices.Contains(want.Actions, "*") {
			continue
		}
		if _, err := f.Env.Repo(r, n.Repo, depotAction(act), Name); err == nil {
			got.Actions = append(got.Actions, act)
		}
	}
	return got, len(got.Actions) > 0
}

// The token spec's actions and the repository actions they need.
const (
	actionPull   = "pull"
	actionPush   = "push"
	actionDelete = "delete"
)

func depotAction(tokenAction string) string {
	switch tokenAction {
	case actionPush:
		return meta.ActionWrite
	case actionDelete:
		return meta.ActionDelete
	}
	return meta.ActionRead
}

func tokenAction(depot string) string {
	switch depot {
	case meta.ActionWrite:
		return actionPush
	case meta.ActionDelete:
		return actionDelete
	}
	return actionPull
}

// granted checks a registry token's access claim for action on image n:
// a token asked for dst/img:pull cannot push there. Other credentials
// are not narrowed by it. A missing grant is a 401 with the scope needed,
// so the client asks for a token that has it.
func granted(r *format.Request, n ImageName, action string) error {
	if !r.Principal.Granted("repository", n.String(), tokenAction(action)) {
		return errf(http.StatusUnauthorized, codeUnauthorized, "the token does not grant %s on %s", tokenAction(action), n.String())
	}
	return nil
}

// tokenPost answers the OAuth2 form with 404, which makes docker fall
// back to GET (405 would not).
func (f *Format) tokenPost(_ context.Context, _ *format.Request) (*format.Response, error) {
	return nil, errf(http.StatusNotFound, codeUnsupported, "OAuth2 token requests are not supported; use GET")
}
