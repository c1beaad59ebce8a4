package api

import (
	"net/http"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

func (s *Server) stats(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var st meta.Stats
	if err := s.view(func(tx *meta.Tx) error { var err error; st, err = tx.Stats(); return err }); err != nil {
		return err
	}
	var dl int64
	if s.d.Downloads != nil {
		dl = s.d.Downloads.Last24h()
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"repositories": st.Repositories, "artifacts": st.Artifacts, "total_size_bytes": st.TotalSizeBytes,
		"users": st.Users, "downloads_24h": dl})
}
