package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) listPackages(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l, err := s.app.ListPackages(r.Context(), p, app.PackageFilter{Format: q.Get("format"), Query: q.Get("query"),
		RepositoryID: q.Get("repository_id"), Page: pg})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, packageList{Packages: l.Items, Total: l.Total, Page: pg.Number, Limit: pg.Limit})
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	name := r.PathValue("name")
	out, err := s.app.ListVersions(r.Context(), p, name, r.URL.Query().Get("repository_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, versionList{Name: name, Versions: out})
}
