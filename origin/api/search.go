package api

import (
	"net/http"

	"github.com/depot-registry/depot/shared/auth"
)

// search answers GET /search/<kind> (app.Search; the bodies are
// shared/search's).
func (s *Server) search(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		out, err := s.app.Search(r.Context(), p, kind, r.URL.Query())
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) reindexState(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, err := s.app.ReindexState(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) startReindex(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, idx, err := s.app.StartReindex(r.Context(), p)
	return written(w, idx, err, http.StatusAccepted, st)
}
