package app

import (
	"context"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// readableRepos lists the ids of repositories p may read, narrowed to one
// when only is set (then it must be readable).
func readableRepos(tx *meta.Tx, p *auth.Principal, only string) ([]string, error) {
	if only != "" {
		repo, err := RepoAccess(tx, p, only, meta.ActionRead)
		if err != nil {
			return nil, err
		}
		return []string{repo.ID}, nil
	}
	ids, err := auth.Readable(tx, p)
	if ids == nil {
		ids = []string{} // nil would mean every repository
	}
	return ids, err
}

// PackageFilter narrows a listing of packages.
type PackageFilter struct {
	Format, Query, RepositoryID string
	Page                        Page
}

// ListPackages lists the packages of the repositories p may read.
func (a *App) ListPackages(_ context.Context, p *auth.Principal, in PackageFilter) (Listing[meta.PackageSummary], error) {
	out := Listing[meta.PackageSummary]{Page: in.Page.clamped()}
	if in.Format != "" && !a.knownFormat(in.Format) {
		return out, apierr.Invalid("format", "unknown format %q; known: %s", in.Format, strings.Join(a.knownFormats(), ", "))
	}
	if len(in.Query) > 256 {
		return out, apierr.Invalid("query", "query is longer than 256 characters")
	}
	f := meta.PackageFilter{Format: in.Format, Query: in.Query, Offset: out.Page.offset(), Limit: out.Page.Limit}
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if f.RepoIDs, err = readableRepos(tx, p, in.RepositoryID); err != nil {
			return err
		}
		out.Items, out.Total, err = tx.Packages(f)
		return err
	})
	return out, err
}

// ListVersions lists the versions of a package in the repositories p may
// read (or the one given, which must be readable); none is NotFound.
func (a *App) ListVersions(_ context.Context, p *auth.Principal, name, repositoryID string) ([]meta.VersionSummary, error) {
	out := []meta.VersionSummary{}
	err := a.view(func(tx *meta.Tx) error {
		ids, err := packageRepos(tx, p, name, repositoryID)
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
	if err == nil && len(out) == 0 {
		err = apierr.New(apierr.NotFound, "package %s not found", name)
	}
	return out, err
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

// VersionFiles lists the files of one version of a package in a
// repository p may read, in path order.
func (a *App) VersionFiles(_ context.Context, p *auth.Principal, repositoryID, name, version string) ([]meta.Artifact, error) {
	var out []meta.Artifact
	err := a.view(func(tx *meta.Tx) error {
		repo, err := RepoAccess(tx, p, repositoryID, meta.ActionRead)
		if err != nil {
			return err
		}
		out, err = tx.VersionFiles(repo.ID, name, version)
		return err
	})
	if err == nil && len(out) == 0 {
		err = apierr.New(apierr.NotFound, "version %s of package %s not found", version, name)
	}
	return out, err
}
