package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		Name      string     `json:"name"`
		Scopes    []string   `json:"scopes"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 100 {
		return apierr.Invalid("name", "name is required (at most 100 characters)")
	}
	scopes, err := auth.ParseScopes(req.Scopes)
	if err != nil {
		return apierr.Invalid("scopes", "%s", err.Error())
	}
	if auth.AllowsGlobalAdmin(scopes) && p.Role != meta.RoleAdmin {
		return apierr.Invalid("scopes", "only administrators can create tokens with the admin scope")
	}
	now := s.d.Now().UTC()
	if req.ExpiresAt != nil && !req.ExpiresAt.After(now) {
		return apierr.Invalid("expires_at", "expires_at must be in the future")
	}
	secret, hash, err := auth.NewAPIToken()
	if err != nil {
		return err
	}
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = sc.String()
	}
	t := meta.Token{ID: s.d.NewID(), UserID: p.UserID, Name: req.Name, Scopes: names, Hash: hash,
		Hint: secret[:len(auth.TokenPrefix)+4], CreatedAt: now}
	if req.ExpiresAt != nil {
		exp := req.ExpiresAt.UTC()
		t.ExpiresAt = &exp
	}
	if err := s.apply(r.Context(), w, &meta.TokenCreate{Token: t}); err != nil {
		return err
	}
	type created struct {
		tokenView
		Token string `json:"token"`
	}
	return writeJSON(w, http.StatusCreated, created{tokenView: viewToken(&t, now), Token: secret})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	out := []tokenView{}
	now := s.d.Now()
	err := s.view(func(tx *meta.Tx) error {
		toks, err := tx.TokensOf(p.UserID)
		for i := range toks {
			out = append(out, viewToken(&toks[i], now))
		}
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	return s.applyNoContent(r.Context(), w, &meta.TokenRevoke{ID: r.PathValue("id"), UserID: p.UserID})
}
