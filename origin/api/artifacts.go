package api

import (
	"net/http"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.app.Artifact(r.Context(), p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, format.ViewArtifact(a, repo.Name))
}

func (s *Server) downloadArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	resp, err := s.app.DownloadArtifact(r.Context(), p, r.PathValue("id"), formatRequest(r))
	if err != nil {
		return err
	}
	return httpx.WriteResponse(w, r, resp, s.app.Blobs)
}

// formatRequest is how r came, as a format sees it, for the REST calls
// that go through a format (downloads, deletes); the use case sets who
// asks and the repository.
func formatRequest(r *http.Request) *format.Request {
	return &format.Request{Method: r.Method, Query: r.URL.Query(), Header: r.Header, ContentLength: -1,
		BaseURL: httpx.BaseURL(r), RemoteAddr: httpx.ClientIP(r), RequestID: httpx.RequestID(r.Context())}
}

// deleteArtifact removes an artifact, its format keeping itself
// consistent (app.DeleteArtifact).
func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteArtifact(r.Context(), p, r.PathValue("id"), formatRequest(r))
	return written(w, idx, err, http.StatusNoContent, nil)
}
