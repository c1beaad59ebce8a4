package api

import (
	"net/http"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
)

// checksumResults is the answer of a checksum search.
type checksumResults struct {
	Checksum  string                `json:"checksum"`
	Algorithm string                `json:"algorithm"`
	Results   []format.ArtifactView `json:"results"`
	Total     int                   `json:"total"`
}

func (s *Server) searchChecksum(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	sum := r.URL.Query().Get("checksum")
	algo, found, err := s.app.SearchChecksum(r.Context(), p, sum)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, checksumResults{Checksum: sum, Algorithm: algo, Results: found, Total: len(found)})
}
