package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

// pluginList is GET /plugins.
type pluginList struct {
	Plugins []app.Plugin `json:"plugins"`
}

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ps, err := s.app.Plugins(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pluginList{Plugins: ps})
}

func (s *Server) setPlugin(enabled bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		pl, idx, err := s.app.SetPlugin(r.Context(), p, r.PathValue("id"), enabled)
		return written(w, idx, err, http.StatusOK, pl)
	}
}

func (s *Server) deletePlugin(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeletePlugin(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}

// installPlugin is POST /plugins: the body is the module (at most the
// plugin engine's module bound, read by the application).
func (s *Server) installPlugin(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pl, idx, err := s.app.InstallPlugin(r.Context(), p, r.Body)
	return written(w, idx, err, http.StatusCreated, pl)
}
