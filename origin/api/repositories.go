package api

import (
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/meta"
)

// Repository names appear in client URLs and image references, so they are
// kept to a portable alphabet; formats may ask for more (format.CheckRepo).
var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func checkRepoName(name string) error {
	if !repoNameRE.MatchString(name) {
		return apierr.Invalid("name", "name must be 1-100 characters: letters, digits, '.', '_', '-', starting with a letter or digit")
	}
	return nil
}

// repoAccess loads a repository by id and checks that p may do action on
// it with the one access check (format.Access). Unlike a name on a package
// path, an id is not guessable, so a signed-in caller who may not read an
// existing repository is refused (403) rather than told it is not there.
func repoAccess(tx *meta.Tx, p *auth.Principal, id, action string) (*meta.Repository, error) {
	repo, err := tx.Repo(id)
	if errors.Is(err, meta.ErrNotFound) {
		repo = nil
	} else if err != nil {
		return nil, err
	}
	if err := format.AccessByID(tx, p, repo, id, action); err != nil {
		return nil, err
	}
	return repo, nil
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, lim, err := page(r)
	if err != nil {
		return err
	}
	fmtName := r.URL.Query().Get("format")
	if fmtName != "" && !all.Known(fmtName) {
		return apierr.Invalid("format", "unknown format %q; known: %s", fmtName, strings.Join(all.Names(), ", "))
	}
	// The readable repositories in name order come from indexes; only
	// the page's records are read (all of the readable ones to filter by
	// format).
	out, total := []repoView{}, 0
	err = s.view(func(tx *meta.Tx) error {
		readable, err := auth.Readable(tx, p)
		if err != nil {
			return err
		}
		byName, err := tx.RepoIDsByName()
		if err != nil {
			return err
		}
		var ids []string
		for _, id := range byName {
			if _, ok := slices.BinarySearch(readable, id); ok {
				ids = append(ids, id)
			}
		}
		if fmtName != "" {
			kept := ids[:0]
			for _, id := range ids {
				repo, err := tx.Repo(id)
				if err != nil {
					return err
				}
				if repo.Format == fmtName {
					kept = append(kept, id)
				}
			}
			ids = kept
		}
		total = len(ids)
		from, to := window(total, pg, lim)
		for _, id := range ids[from:to] {
			repo, err := tx.Repo(id)
			if err != nil {
				return err
			}
			out = append(out, viewRepo(repo))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"repositories": out, "total": total, "page": pg, "limit": lim})
}

// servedFormats lists, sorted, the repository formats that have client
// paths on this node.
func (s *Server) servedFormats() []string {
	out := make([]string, 0, len(s.d.Formats))
	for name := range s.d.Formats {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (s *Server) createRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		Name        string            `json:"name"`
		Format      string            `json:"format"`
		Description string            `json:"description"`
		Public      bool              `json:"public"`
		Settings    map[string]string `json:"settings"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	switch {
	case p.Role == meta.RoleViewer:
		return apierr.New(apierr.Forbidden, "viewers cannot create repositories")
	case p.Role == meta.RoleUser && !s.cfg.UsersCreateRepo:
		return apierr.New(apierr.Forbidden, "only administrators can create repositories here")
	case p.TokenID != "" && !auth.Allows(p.Scopes, meta.ActionAdmin, req.Name):
		return apierr.New(apierr.Forbidden, "this token's scopes do not allow creating repositories")
	}
	served := s.servedFormats()
	switch _, ok := s.d.Formats[req.Format]; {
	case req.Format == "":
		return apierr.Invalid("format", "format is required; one of %s", strings.Join(served, ", ")).With("served", served)
	case !all.Known(req.Format):
		return apierr.Invalid("format", "unknown format %q; one of %s", req.Format, strings.Join(served, ", ")).With("served", served)
	case !ok:
		// A repository nothing serves would answer 404 on every client path.
		return apierr.Invalid("format", "format %q is not served yet; one of %s", req.Format, strings.Join(served, ", ")).With("served", served)
	}
	if err := checkRepoName(req.Name); err != nil {
		return err
	}
	if len(req.Description) > 4096 {
		return apierr.Invalid("description", "description is longer than 4096 characters")
	}
	if err := format.CheckRepo(s.d.Formats[req.Format], req.Name, req.Settings); err != nil {
		return err
	}
	now := s.d.Now().UTC()
	repo := meta.Repository{ID: s.d.NewID(), Name: req.Name, Format: req.Format, Description: req.Description,
		Public: req.Public, Settings: req.Settings, CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now}
	cmd := &meta.RepoCreate{Repo: repo}
	if p.Role != meta.RoleAdmin {
		cmd.CreatorGrant = &meta.Permission{ID: s.d.NewID(), UserID: p.UserID, Permissions: []string{meta.ActionAdmin}, CreatedAt: now}
	}
	if err := s.apply(r.Context(), w, cmd); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, viewRepo(&repo))
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var repo *meta.Repository
	err := s.view(func(tx *meta.Tx) error {
		var err error
		repo, err = repoAccess(tx, p, r.PathValue("id"), meta.ActionRead)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewRepo(repo))
}

func (s *Server) updateRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		Description *string           `json:"description"`
		Public      *bool             `json:"public"`
		Name        *string           `json:"name"`
		Format      *string           `json:"format"`
		Settings    map[string]string `json:"settings"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	var repo *meta.Repository
	err := s.view(func(tx *meta.Tx) error {
		var err error
		repo, err = repoAccess(tx, p, id, meta.ActionAdmin)
		return err
	})
	if err != nil {
		return err
	}
	if req.Name != nil && *req.Name != repo.Name {
		return apierr.Invalid("name", "a repository cannot be renamed")
	}
	if req.Format != nil && *req.Format != repo.Format {
		return apierr.Invalid("format", "a repository's format cannot change")
	}
	if req.Description != nil && len(*req.Description) > 4096 {
		return apierr.Invalid("description", "description is longer than 4096 characters")
	}
	if err := format.CheckRepo(s.d.Formats[repo.Format], "", req.Settings); err != nil {
		return err
	}
	cmd := &meta.RepoUpdate{ID: id, Description: req.Description, Public: req.Public, Settings: req.Settings, At: s.d.Now().UTC()}
	if err := s.apply(r.Context(), w, cmd); err != nil {
		return err
	}
	err = s.view(func(tx *meta.Tx) error { var err error; repo, err = tx.Repo(id); return err })
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewRepo(repo))
}

func (s *Server) deleteRepo(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	err := s.view(func(tx *meta.Tx) error {
		_, err := repoAccess(tx, p, id, meta.ActionAdmin)
		return err
	})
	if err != nil {
		return err
	}
	return s.applyNoContent(r.Context(), w, &meta.RepoDelete{ID: id})
}
