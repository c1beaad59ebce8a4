package api

import (
	"net/http"
	"strconv"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/httpx"
)

// Single sign-on (OIDC): GET /auth/oidc/login sends the browser to the
// provider with the flow cookie set; the provider sends it back to GET
// /auth/oidc/callback, which answers the login session's tokens in its
// body (never in a URL, which logs and Referer headers keep).

// oidcCookie carries the flow from the redirect to the callback (MACed;
// see shared/auth/oidc), on the callback's path only.
const oidcCookie = "depot_oidc_flow"

func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	return s.BeginSSO(w, r, "")
}

// BeginSSO sends the browser to the provider with the flow cookie set, for
// the API (next "": the callback answers the tokens) and for the web UI
// (next: its page to return to, through Deps.BrowserSignIn).
func (s *Server) BeginSSO(w http.ResponseWriter, r *http.Request, next string) error {
	redirect, flow, err := s.app.OIDCBegin(r.Context(), httpx.SeenURL(r), next)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: flow, Path: Prefix + "/auth/oidc/", MaxAge: 600,
		HttpOnly: true, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, redirect, http.StatusFound)
	return nil
}

func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var flow string
	if c, err := r.Cookie(oidcCookie); err == nil {
		flow = c.Value
	}
	// The flow is used once, whatever the outcome.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Path: Prefix + "/auth/oidc/", MaxAge: -1, HttpOnly: true})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	in, err := s.app.OIDCFinish(r.Context(), r.URL.Query(), flow)
	if err == nil {
		s.auditLogin(r, in.Principal.Username, in.Principal.UserID, "success", http.StatusOK)
	}
	if in.Next != "" && s.browserSignIn != nil {
		// Begun on the web UI's sign-in page: the session goes into its
		// cookies, the browser back to the page.
		if in.Index > 0 {
			w.Header().Set("X-Depot-Index", strconv.FormatUint(in.Index, 10))
		}
		s.browserSignIn(w, r, in.Pair, in.Next, err)
		return nil
	}
	if err != nil {
		return written(w, in.Index, err, 0, nil)
	}
	return written(w, in.Index, nil, http.StatusOK, in.Pair)
}
