package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// artifactAccess loads an artifact and checks action on its repository.
func (s *Server) artifactAccess(p *auth.Principal, id, action string) (*meta.Artifact, *meta.Repository, error) {
	var a *meta.Artifact
	var repo *meta.Repository
	err := s.view(func(tx *meta.Tx) error {
		var err error
		if a, err = tx.Artifact(id); err != nil {
			return err
		}
		repo, err = app.RepoAccess(tx, p, a.RepositoryID, action)
		return err
	})
	return a, repo, err
}

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.artifactAccess(p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, format.ViewArtifact(a, repo.Name))
}

func (s *Server) downloadArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.artifactAccess(p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	// The same answer a format path gives for the file, as an attachment.
	req := s.formatRequest(r, p, repo)
	return httpx.WriteResponse(w, r, s.d.Env.Serve(req, a, true), s.d.Blobs)
}

// formatRequest is r as a format sees it, for the REST calls that go
// through a format (downloads, deletes).
func (s *Server) formatRequest(r *http.Request, p *auth.Principal, repo *meta.Repository) *format.Request {
	return &format.Request{Method: r.Method, Query: r.URL.Query(), Header: r.Header, ContentLength: -1,
		Principal: p, Repo: repo, BaseURL: httpx.BaseURL(r), RemoteAddr: httpx.ClientIP(r), RequestID: httpx.RequestID(r.Context())}
}

// deleteArtifact removes an artifact; a format that keeps state beside
// its artifacts (OCI tags, npm dist-tags) does it, so that state follows.
func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.artifactAccess(p, r.PathValue("id"), meta.ActionDelete)
	if err != nil {
		return err
	}
	var idx uint64
	if del, ok := s.d.Formats[repo.Format].(format.ArtifactDeleter); ok {
		idx, err = del.DeleteArtifact(r.Context(), s.formatRequest(r, p, repo), s.d.Writer, a)
	} else {
		idx, err = s.d.Writer.DeleteArtifact(r.Context(), s.formatRequest(r, p, repo), repo, a.ID)
	}
	if idx > 0 {
		format.SetIndex(w.Header(), idx)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
