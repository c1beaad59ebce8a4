package api

import (
	"net/http"
	"path"

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
		repo, err = repoAccess(tx, p, a.RepositoryID, action)
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
	a, _, err := s.artifactAccess(p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	f, err := s.d.Blobs.Open(r.Context(), a.Digest)
	if err != nil {
		return err
	}
	defer f.Close()
	format.SetFileHeaders(w.Header(), a, true)
	if r.Method == http.MethodGet && s.d.Downloads != nil {
		s.d.Downloads.Add()
	}
	http.ServeContent(w, r, path.Base(a.Path), a.UploadedAt, f)
	return nil
}

// deleteArtifact removes an artifact; a format that keeps state beside
// its artifacts (OCI tags, npm dist-tags) does it, so that state follows.
func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.artifactAccess(p, r.PathValue("id"), meta.ActionDelete)
	if err != nil {
		return err
	}
	del, ok := s.d.Formats[repo.Format].(format.ArtifactDeleter)
	if !ok {
		return s.applyNoContent(r.Context(), w, &meta.ArtifactDelete{ID: a.ID})
	}
	req := &format.Request{Method: r.Method, Principal: p, RequestID: httpx.RequestID(r.Context())}
	idx, err := del.DeleteArtifact(r.Context(), req, repo, a)
	if idx > 0 {
		format.SetIndex(w.Header(), idx)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
