package api

import (
	"net/http"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/meta"
)

// readableRepos lists the ids of repositories p may read, narrowed to one
// when only is set (then it must be readable).
func readableRepos(tx *meta.Tx, p *auth.Principal, only string) ([]string, error) {
	if only != "" {
		if _, err := app.RepoAccess(tx, p, only, meta.ActionRead); err != nil {
			return nil, err
		}
		return []string{only}, nil
	}
	ids, err := auth.Readable(tx, p)
	if ids == nil {
		ids = []string{} // nil would mean every repository
	}
	return ids, err
}

func (s *Server) listPackages(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, lim, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := meta.PackageFilter{Format: q.Get("format"), Query: q.Get("query"), Offset: (pg - 1) * lim, Limit: lim}
	if f.Format != "" && !all.Known(f.Format) {
		return apierr.Invalid("format", "unknown format %q; known: %s", f.Format, strings.Join(all.Names(), ", "))
	}
	if len(f.Query) > 256 {
		return apierr.Invalid("query", "query is longer than 256 characters")
	}
	var pkgs []meta.PackageSummary
	var total int
	err = s.view(func(tx *meta.Tx) error {
		var err error
		if f.RepoIDs, err = readableRepos(tx, p, q.Get("repository_id")); err != nil {
			return err
		}
		pkgs, total, err = tx.Packages(f)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"packages": pkgs, "total": total, "page": pg, "limit": lim})
}

// packageRepos lists the ids of the repositories p may read that have a
// package of that name (or only the one given, which must be readable):
// only those repositories are read.
func packageRepos(tx *meta.Tx, p *auth.Principal, name, only string) ([]string, error) {
	if only != "" {
		return readableRepos(tx, p, only)
	}
	ids := []string{}
	for _, id := range tx.PackageRepos(name) {
		repo, err := tx.Repo(id)
		if err != nil {
			return nil, err
		}
		if ok, err := auth.Can(tx, p, repo, meta.ActionRead); err != nil {
			return nil, err
		} else if ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	name := r.PathValue("name")
	out := []meta.VersionSummary{}
	err := s.view(func(tx *meta.Tx) error {
		ids, err := packageRepos(tx, p, name, r.URL.Query().Get("repository_id"))
		if err != nil {
			return err
		}
		for _, id := range ids {
			vs, err := tx.Versions(id, name)
			if err != nil {
				return err
			}
			out = append(out, vs...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return apierr.New(apierr.NotFound, "package %s not found", name)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"name": name, "versions": out})
}
