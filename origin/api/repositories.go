package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := s.app.ListRepositories(r.Context(), p, app.RepoFilter{Format: r.URL.Query().Get("format"), Page: pg})
	if err != nil {
		return err
	}
	out := make([]repoView, len(l.Items))
	for i := range l.Items {
		out[i] = viewRepo(&l.Items[i])
	}
	return writeJSON(w, http.StatusOK, repoList{Repositories: out, Total: l.Total, Page: pg.Number, Limit: pg.Limit})
}

func (s *Server) createRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newRepoRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	repo, idx, err := s.app.CreateRepository(r.Context(), p, app.NewRepository{Name: req.Name, Format: req.Format,
		Description: req.Description, Public: req.Public, Settings: req.Settings, Retention: req.Retention})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusCreated, viewRepo(repo))
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	repo, err := s.app.GetRepository(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewRepo(repo))
}

func (s *Server) updateRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req repoChangeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	change := app.RepositoryChange{Description: req.Description, Public: req.Public, Name: req.Name, Format: req.Format, Settings: req.Settings}
	if req.Retention.Set {
		change.Retention = &app.RetentionChange{Rule: req.Retention.Rule}
	}
	repo, idx, err := s.app.UpdateRepository(r.Context(), p, r.PathValue("id"), change)
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, viewRepo(repo))
}

func (s *Server) deleteRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteRepository(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}
