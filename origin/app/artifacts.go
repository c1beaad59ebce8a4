package app

import (
	"context"
	"net/http"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Artifact reads an artifact and its repository, when p may do action
// on the repository.
func (a *App) Artifact(_ context.Context, p *auth.Principal, id, action string) (*meta.Artifact, *meta.Repository, error) {
	var art *meta.Artifact
	var repo *meta.Repository
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if art, err = tx.Artifact(id); err != nil {
			return err
		}
		repo, err = RepoAccess(tx, p, art.RepositoryID, action)
		return err
	})
	return art, repo, err
}

// DownloadArtifact answers an artifact p may read the way its format's
// path answers the file, as an attachment; via is how the request came
// (its Principal and Repo are set here; nil: a GET). The answer's blob is read from
// a.Blobs.
func (a *App) DownloadArtifact(ctx context.Context, p *auth.Principal, id string, via *format.Request) (*format.Response, error) {
	art, repo, err := a.Artifact(ctx, p, id, meta.ActionRead)
	if err != nil {
		return nil, err
	}
	if via == nil {
		via = &format.Request{Method: http.MethodGet}
	}
	via.Principal, via.Repo = p, repo
	return a.Env.Serve(via, art, true)
}

// DeleteArtifact deletes an artifact p may delete, keeping its format
// consistent: a format that keeps state beside its artifacts (OCI tags,
// npm dist-tags) or whose versions go whole deletes through its own
// format.ArtifactDeleter. via says how the request came (the format's
// view of it: address, base URL, request id); its Principal and Repo are
// set here.
func (a *App) DeleteArtifact(ctx context.Context, p *auth.Principal, id string, via *format.Request) (uint64, error) {
	art, repo, err := a.Artifact(ctx, p, id, meta.ActionDelete)
	if err != nil {
		return 0, err
	}
	if via == nil {
		via = &format.Request{}
	}
	via.Principal, via.Repo = p, repo
	return a.Writer.DeleteThrough(ctx, a.formatOf(ctx, repo.Format), via, art)
}

// PropertiesChange is a change of an artifact's properties: with Replace
// they become Set; otherwise Set's keys are replaced and Remove's removed.
type PropertiesChange struct {
	Set     map[string][]string
	Remove  []string
	Replace bool
}

// SetArtifactProperties changes the properties of an artifact p may
// write (updating metadata is writing, as uploading is) and answers them
// as they are after the change.
func (a *App) SetArtifactProperties(ctx context.Context, p *auth.Principal, id string, ch PropertiesChange) (map[string][]string, uint64, error) {
	if len(ch.Set) > meta.MaxProperties || len(ch.Remove) > meta.MaxProperties {
		return nil, 0, apierr.Invalid("properties", "at most %d properties", meta.MaxProperties)
	}
	if err := meta.CheckProperties(ch.Set); err != nil {
		return nil, 0, apierr.Invalid("properties", "%s", strings.TrimPrefix(err.Error(), "invalid: "))
	}
	idx, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		art, err := tx.Artifact(id)
		if err != nil {
			return nil, err
		}
		if _, err := RepoAccess(tx, p, art.RepositoryID, meta.ActionWrite); err != nil {
			return nil, err
		}
		return &meta.ArtifactProperties{ID: art.ID, RepoID: art.RepositoryID, Replace: ch.Replace, Set: ch.Set, Remove: ch.Remove}, nil
	})
	if err != nil {
		return nil, idx, err
	}
	art, _, err := a.Artifact(ctx, p, id, meta.ActionRead)
	if err != nil {
		return nil, idx, err
	}
	return art.Properties, idx, nil
}
