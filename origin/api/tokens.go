package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newTokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	t, secret, idx, err := s.app.CreateToken(r.Context(), p, app.NewToken{Name: req.Name, Scopes: req.Scopes, ExpiresAt: req.ExpiresAt})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusCreated, tokenCreated{tokenView: viewToken(t, s.now()), Token: secret})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	toks, err := s.app.ListTokens(r.Context(), p)
	if err != nil {
		return err
	}
	now := s.now()
	out := make([]tokenView, len(toks))
	for i := range toks {
		out[i] = viewToken(&toks[i], now)
	}
	return writeJSON(w, http.StatusOK, tokenList{Tokens: out})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.RevokeToken(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}
