package app

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Repository names appear in client URLs and image references, so they are
// kept to a portable alphabet; formats may ask for more (format.CheckRepo).
var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

const maxDescription = 4096

// PortableName reports whether a name keeps to the portable alphabet of
// repository and edge node names.
func PortableName(name string) bool { return repoNameRE.MatchString(name) }

// RepoAccess loads a repository by id (or by name: tx.RepoByRef) and
// checks that p may do action on it with the one access check
// (format.Access). Unlike a name on a package path, an id is not
// guessable, so a signed-in caller who may not read an existing
// repository it names by id is refused (403) rather than told it is not
// there; named by name, it is not found, as on a package path.
func RepoAccess(tx *meta.Tx, p *auth.Principal, ref, action string) (*meta.Repository, error) {
	return format.RepoByRef(tx, p, ref, action)
}

// RepoFilter narrows a listing of repositories.
type RepoFilter struct {
	Format string // "": any
	Page   Page
}

// ListRepositories lists, in name order, the repositories p may read.
func (a *App) ListRepositories(_ context.Context, p *auth.Principal, f RepoFilter) (Listing[meta.Repository], error) {
	out := Listing[meta.Repository]{Items: []meta.Repository{}, Page: f.Page.clamped()}
	if f.Format != "" && !a.knownFormat(f.Format) {
		return out, apierr.Invalid("format", "unknown format %q; known: %s", f.Format, strings.Join(a.knownFormats(), ", "))
	}
	// The readable repositories in name order come from indexes; only
	// the page's records are read (all of the readable ones to filter by
	// format).
	err := a.view(func(tx *meta.Tx) error {
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
		if f.Format != "" {
			kept := ids[:0]
			for _, id := range ids {
				repo, err := tx.Repo(id)
				if err != nil {
					return err
				}
				if repo.Format == f.Format {
					kept = append(kept, id)
				}
			}
			ids = kept
		}
		out.Total = len(ids)
		from, to := f.Page.window(out.Total)
		for _, id := range ids[from:to] {
			repo, err := tx.Repo(id)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, *repo)
		}
		return nil
	})
	return out, err
}

// ServedFormats lists, sorted, the repository formats that have client
// paths on this node.
func (a *App) ServedFormats() []string {
	out := make([]string, 0, len(a.Formats))
	for name := range a.Formats {
		out = append(out, name)
	}
	plugins, _ := a.installedPlugins()
	for _, p := range plugins {
		out = append(out, p.Format)
	}
	slices.Sort(out)
	return out
}

// NewRepository is what creating a repository takes.
type NewRepository struct {
	Name, Format, Description string
	// Public: nil takes the repositories.default_public setting.
	Public   *bool
	Settings map[string]string
	// Retention: the repository's own retention rule (nil: the default).
	Retention *meta.Retention
}

// CreateRepository creates a repository; one made by a user who is not an
// administrator is granted admin on it to that user.
func (a *App) CreateRepository(ctx context.Context, p *auth.Principal, in NewRepository) (*meta.Repository, uint64, error) {
	switch {
	case p.Anonymous():
		return nil, 0, apierr.New(apierr.Unauthorized, "authentication required")
	case p.Role == meta.RoleViewer:
		return nil, 0, apierr.New(apierr.Forbidden, "viewers cannot create repositories")
	case p.Role == meta.RoleUser && !a.Settings().UsersCreateRepositories:
		return nil, 0, apierr.New(apierr.Forbidden, "only administrators can create repositories here")
	case p.TokenID != "" && !auth.Allows(p.Scopes, meta.ActionAdmin, in.Name):
		return nil, 0, apierr.New(apierr.Forbidden, "this token's scopes do not allow creating repositories")
	}
	served := a.ServedFormats()
	handler := a.formatOf(ctx, in.Format)
	switch ok := handler != nil; {
	case in.Format == "":
		return nil, 0, apierr.Invalid("format", "format is required; one of %s", strings.Join(served, ", ")).With("served", served)
	case !a.knownFormat(in.Format):
		return nil, 0, apierr.Invalid("format", "unknown format %q; one of %s", in.Format, strings.Join(served, ", ")).With("served", served)
	case !ok:
		// A repository nothing serves would answer 404 on every client path.
		return nil, 0, apierr.Invalid("format", "format %q is not served yet; one of %s", in.Format, strings.Join(served, ", ")).With("served", served)
	}
	if !repoNameRE.MatchString(in.Name) {
		return nil, 0, apierr.Invalid("name", "name must be 1-100 characters: letters, digits, '.', '_', '-', starting with a letter or digit")
	}
	if len(in.Description) > maxDescription {
		return nil, 0, apierr.Invalid("description", "description is longer than 4096 characters")
	}
	if err := format.CheckRepo(handler, in.Name, in.Settings); err != nil {
		return nil, 0, err
	}
	if err := a.view(func(tx *meta.Tx) error { return checkSigningKey(tx, in.Settings) }); err != nil {
		return nil, 0, err
	}
	if err := checkRetention(in.Retention); err != nil {
		return nil, 0, err
	}
	public := a.Settings().DefaultPublic
	if in.Public != nil {
		public = *in.Public
	}
	now := a.now()
	repo := meta.Repository{ID: a.NewID(), Name: in.Name, Format: in.Format, Description: in.Description,
		Public: public, Settings: in.Settings, CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now}
	cmd := &meta.RepoCreate{Repo: repo}
	if p.Role != meta.RoleAdmin {
		cmd.CreatorGrant = &meta.Permission{ID: a.NewID(), UserID: p.UserID, Permissions: []string{meta.ActionAdmin}, CreatedAt: now}
	}
	idx, err := a.commit(ctx, cmd)
	if err != nil {
		return nil, idx, err
	}
	if in.Retention != nil {
		// A command of its own (meta.RepoRetain): one that a cluster in the
		// middle of an upgrade refuses, leaving the repository without it.
		if idx, err = a.commit(ctx, &meta.RepoRetain{ID: repo.ID, Rule: in.Retention, At: now}); err != nil {
			return nil, idx, fmt.Errorf("the repository %s was created, but not its retention rule (set it again with PUT): %w", repo.Name, err)
		}
		repo.Retention = in.Retention
	}
	return &repo, idx, nil
}

// GetRepository reads a repository p may read.
func (a *App) GetRepository(_ context.Context, p *auth.Principal, id string) (*meta.Repository, error) {
	var repo *meta.Repository
	err := a.view(func(tx *meta.Tx) error {
		var err error
		repo, err = RepoAccess(tx, p, id, meta.ActionRead)
		return err
	})
	return repo, err
}

// RepositoryChange is what updating a repository may change (nil: keep);
// Name and Format, when given, must be the repository's own.
type RepositoryChange struct {
	Description, Name, Format *string
	Public                    *bool
	Settings                  map[string]string
	Retention                 *RetentionChange
}

// RetentionChange sets a repository's own retention rule, or with Rule
// nil removes it (the installation's default applies again).
type RetentionChange struct{ Rule *meta.Retention }

// checkRetention refuses a rule that says nothing sensible.
func checkRetention(r *meta.Retention) error {
	if r == nil {
		return nil
	}
	if err := r.Check(); err != nil {
		return apierr.Invalid("retention", "%s", err)
	}
	return nil
}

// UpdateRepository changes a repository p administers.
func (a *App) UpdateRepository(ctx context.Context, p *auth.Principal, id string, in RepositoryChange) (*meta.Repository, uint64, error) {
	idx, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		repo, err := RepoAccess(tx, p, id, meta.ActionAdmin)
		if err != nil {
			return nil, err
		}
		switch {
		case in.Name != nil && *in.Name != repo.Name:
			return nil, apierr.Invalid("name", "a repository cannot be renamed")
		case in.Format != nil && *in.Format != repo.Format:
			return nil, apierr.Invalid("format", "a repository's format cannot change")
		case in.Description != nil && len(*in.Description) > maxDescription:
			return nil, apierr.Invalid("description", "description is longer than 4096 characters")
		}
		if err := format.CheckRepo(a.formatOf(ctx, repo.Format), "", in.Settings); err != nil {
			return nil, err
		}
		if err := checkSigningKey(tx, in.Settings); err != nil {
			return nil, err
		}
		if in.Retention != nil {
			if err := checkRetention(in.Retention.Rule); err != nil {
				return nil, err
			}
		}
		id = repo.ID // it may have been named by its name
		if in.Retention != nil && in.Description == nil && in.Public == nil && len(in.Settings) == 0 {
			return nil, nil // only the rule changes
		}
		return &meta.RepoUpdate{ID: id, Description: in.Description, Public: in.Public, Settings: in.Settings, At: a.now()}, nil
	})
	if err != nil {
		return nil, idx, err
	}
	if in.Retention != nil {
		if idx, err = a.commit(ctx, &meta.RepoRetain{ID: id, Rule: in.Retention.Rule, At: a.now()}); err != nil {
			return nil, idx, err
		}
	}
	var repo *meta.Repository
	err = a.view(func(tx *meta.Tx) error { var err error; repo, err = tx.Repo(id); return err })
	return repo, idx, err
}

// DeleteRepository deletes a repository p administers, with its
// artifacts.
func (a *App) DeleteRepository(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	return a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		repo, err := RepoAccess(tx, p, id, meta.ActionAdmin)
		if err != nil {
			return nil, err
		}
		return &meta.RepoDelete{ID: repo.ID}, nil
	})
}

// checkSigningKey refuses a signing_key setting that names no active
// signing key.
func checkSigningKey(tx *meta.Tx, settings map[string]string) error {
	id := settings["signing_key"]
	if id == "" {
		return nil // not set, or removed
	}
	k, err := tx.SigningKey(id)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return apierr.Invalid("settings", "setting signing_key: no signing key %s (GET /api/v1/signing/keys lists them)", id).With("setting", "signing_key")
	case err != nil:
		return err
	case k.Status != meta.KeyActive:
		return apierr.Invalid("settings", "setting signing_key: key %s is retired: it signs no more", k.Name).With("setting", "signing_key")
	}
	return nil
}
