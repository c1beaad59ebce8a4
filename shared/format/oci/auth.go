package oci

import (
	"context"
	"encoding/json"
	"github.com/depot-registry/depot/shared/auth"
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
)

// The docker token flow. The token only says who the caller is; every
// request is authorised afresh against its repository, so the scopes a
// client asks for are not needed to decide anything (and asking for more
// than one may do is not an error, as the spec wants).

// ping answers GET /v2/. An anonymous caller is challenged even though
// public repositories need no credentials: a 200 here would make
// `docker login` succeed without checking the password.
func (f *Format) ping(_ context.Context, r *format.Request) (*format.Response, error) {
	if r.Principal.Anonymous() {
		return nil, format.Unauthorized()
	}
	return jsonResp(http.StatusOK, map[string]any{}), nil
}

type tokenResponse struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
}

// token is the realm: Basic credentials (checked by the transport; bad
// ones never get here) or none, for an anonymous token that reads public
// repositories. No refresh_token: docker would then insist on POST.
func (f *Format) token(_ context.Context, r *format.Request) (*format.Response, error) {
	if f.d.Tokens == nil {
		return nil, errf(http.StatusNotFound, codeUnsupported, "registry tokens are not issued here")
	}
	// A registry token must not buy its own successor: it would outlive
	// the logout or password change that ended its origin. (A JWT without
	// a session is a registry token; login sessions and API tokens may.)
	if scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Bearer") &&
		auth.LooksLikeJWT(strings.TrimSpace(cred)) && r.Principal != nil && r.Principal.SessionID == "" {
		return nil, format.Unauthorized()
	}
	tok, exp, err := f.d.Tokens.IssueRegistryToken(r.Principal, TokenTTL)
	if err != nil {
		return nil, err
	}
	issued := exp.Add(-TokenTTL)
	resp := jsonResp(http.StatusOK, tokenResponse{Token: tok, AccessToken: tok,
		ExpiresIn: int(TokenTTL / time.Second), IssuedAt: issued.UTC().Format(time.RFC3339)})
	resp.Header.Set("Cache-Control", "no-store")
	return resp, nil
}

// tokenPost answers the OAuth2 form with 404, which makes docker fall
// back to GET (405 would not).
func (f *Format) tokenPost(_ context.Context, _ *format.Request) (*format.Response, error) {
	return nil, errf(http.StatusNotFound, codeUnsupported, "OAuth2 token requests are not supported; use GET")
}

func jsonResp(status int, v any) *format.Response {
	resp := format.NewResponse(status)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, _ = json.Marshal(v)
	return resp
}
