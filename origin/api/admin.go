package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) stats(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, err := s.app.Stats(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

// cleanup applies the retention rules and runs a garbage collection, or
// with dry_run=true reports what the rules would delete (app.Cleanup).
func (s *Server) cleanup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	dry := false
	if v := r.URL.Query().Get("dry_run"); v != "" {
		var err error
		if dry, err = strconv.ParseBool(v); err != nil {
			return apierr.Invalid("dry_run", "dry_run must be true or false")
		}
	}
	res, err := s.app.Cleanup(r.Context(), p, dry)
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

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.GetSettings(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// settingsChange is PUT /admin/settings: the settings to change, by key
// (null: back to the default).
type settingsChange map[string]json.RawMessage

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in settingsChange
	if err := decode(r, &in); err != nil {
		return err
	}
	v, idx, err := s.app.UpdateSettings(r.Context(), p, in)
	return written(w, idx, err, http.StatusOK, v)
}
