package api

import (
	"net/http"

	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) stats(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, err := s.app.Stats(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

// cleanup runs a garbage collection and answers what it removed
// (app.Cleanup).
func (s *Server) cleanup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	res, err := s.app.Cleanup(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) clusterView(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.ClusterView(r.Context(), p)
	return written(w, 0, err, http.StatusOK, v)
}

func (s *Server) directoryStatus(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.DirectoryStatus(r.Context(), p)
	return written(w, 0, err, http.StatusOK, v)
}

func (s *Server) removeClusterMember(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	return written(w, 0, s.app.RemoveClusterMember(r.Context(), p, r.PathValue("id")), http.StatusNoContent, nil)
}
