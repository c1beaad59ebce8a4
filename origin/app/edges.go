package app

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/progress"
)

// Edge nodes are registered and given repositories by administrators; a
// node authenticates with the credential it got at registration and
// reports itself through its heartbeat (replication/protocol).

const (
	// edgeOnline and edgeStale bound how long ago a node's last report may
	// be for it to be listed online, or stale; older is offline.
	edgeOnline = 30 * time.Second
	edgeStale  = 5 * time.Minute
	// MaxAssign bounds the repositories one assignment names.
	MaxAssign = 1000
)

// EdgeNode is an edge node as administrators see it: its record, the
// state its last report gave, and its repositories.
type EdgeNode struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	URL          string     `json:"url"`
	Region       string     `json:"region"`
	Status       string     `json:"status"` // online, stale or offline
	LastContact  *time.Time `json:"last_contact"`
	AppliedIndex uint64     `json:"applied_index"`
	Lag          *uint64    `json:"lag"` // log entries behind this origin; null before the first report
	CachedBytes  int64      `json:"cached_bytes"`
	MissingBlobs int64      `json:"missing_blobs"`
	// Sync is the node's prefetch progress as of its last report (null
	// before one that carried it).
	Sync          *progress.Sync `json:"sync"`
	Version       string         `json:"version"`
	RepositoryIDs []string       `json:"repository_ids"`
	Repositories  []RepoRef      `json:"repositories"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// RepoRef names a repository.
type RepoRef struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Format string `json:"format"`
}

func (a *App) edgeNode(tx *meta.Tx, e *meta.EdgeNode) (*EdgeNode, error) {
	v := &EdgeNode{ID: e.ID, Name: e.Name, URL: e.URL, Region: e.Region, Status: "offline",
		RepositoryIDs: append([]string{}, e.Repositories...), Repositories: []RepoRef{}, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	for _, id := range e.Repositories {
		r, err := tx.Repo(id)
		if err != nil {
			return v, err
		}
		v.Repositories = append(v.Repositories, RepoRef{ID: r.ID, Name: r.Name, Format: r.Format})
	}
	if rep := e.Report; rep != nil {
		at := rep.At
		v.LastContact, v.AppliedIndex, v.CachedBytes, v.MissingBlobs, v.Version = &at, rep.AppliedIndex, rep.CachedBytes, rep.MissingBlobs, rep.Version
		v.Sync = rep.Sync
		applied := a.Store.LastApplied()
		lag := applied - min(rep.AppliedIndex, applied)
		v.Lag = &lag
		switch age := a.Now().Sub(at); {
		case age <= edgeOnline:
			v.Status = "online"
		case age <= edgeStale:
			v.Status = "stale"
		}
	}
	return v, nil
}

// ListEdgeNodes lists the edge nodes (administrators only).
func (a *App) ListEdgeNodes(_ context.Context, p *auth.Principal) ([]EdgeNode, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return a.edgeNodes()
}

func (a *App) edgeNodes() ([]EdgeNode, error) {
	out := []EdgeNode{}
	err := a.view(func(tx *meta.Tx) error {
		edges, err := tx.Edges()
		for i := range edges {
			v, err := a.edgeNode(tx, &edges[i])
			if err != nil {
				return err
			}
			out = append(out, *v)
		}
		return err
	})
	return out, err
}

// EdgeNodeStates lists the edge nodes for the origin's own reports
// (metrics): no caller to check.
func (a *App) EdgeNodeStates(context.Context) ([]EdgeNode, error) { return a.edgeNodes() }

// GetEdgeNode reads one edge node (administrators only).
func (a *App) GetEdgeNode(_ context.Context, p *auth.Principal, id string) (*EdgeNode, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var v *EdgeNode
	err := a.view(func(tx *meta.Tx) error {
		e, err := tx.Edge(id)
		if err == nil {
			v, err = a.edgeNode(tx, e)
		}
		return err
	})
	return v, err
}

// NewEdgeNode is what registering an edge node takes.
type NewEdgeNode struct {
	Name, URL, Region string
}

// CreateEdgeNode registers an edge node and returns it with its
// credential, shown this once (administrators only).
func (a *App) CreateEdgeNode(ctx context.Context, p *auth.Principal, in NewEdgeNode) (*EdgeNode, string, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, "", 0, err
	}
	if !PortableName(in.Name) {
		return nil, "", 0, apierr.Invalid("name", "name must be 1-100 characters: letters, digits, '.', '_', '-', starting with a letter or digit")
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(in.URL) > 2048 {
		return nil, "", 0, apierr.Invalid("url", "url must be the edge's absolute http or https base URL, e.g. http://edge.example:8081")
	}
	if len(in.Region) > 64 {
		return nil, "", 0, apierr.Invalid("region", "region is longer than 64 characters")
	}
	secret, hash, err := auth.NewEdgeToken()
	if err != nil {
		return nil, "", 0, err
	}
	now := a.now()
	e := meta.EdgeNode{ID: a.NewID(), Name: in.Name, URL: strings.TrimRight(in.URL, "/"), Region: in.Region,
		TokenHash: hash, CreatedAt: now, UpdatedAt: now}
	idx, err := a.commit(ctx, &meta.EdgeCreate{Edge: e})
	if err != nil {
		return nil, "", idx, err
	}
	var v *EdgeNode
	err = a.view(func(tx *meta.Tx) error { var err error; v, err = a.edgeNode(tx, &e); return err })
	return v, secret, idx, err
}

// DeleteEdgeNode deregisters an edge node: its credential stops at once
// (administrators only).
func (a *App) DeleteEdgeNode(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	return a.commit(ctx, &meta.EdgeDelete{ID: id})
}

// AssignRepositories gives an edge node repositories to serve
// (administrators only).
func (a *App) AssignRepositories(ctx context.Context, p *auth.Principal, id string, repoIDs []string) (*EdgeNode, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if len(repoIDs) == 0 || len(repoIDs) > MaxAssign {
		return nil, 0, apierr.Invalid("repository_ids", "give repository_id, or repository_ids listing 1 to %d repository ids or names", MaxAssign)
	}
	ids := make([]string, len(repoIDs)) // names given are taken as their repositories' ids
	err := a.view(func(tx *meta.Tx) error {
		if _, err := tx.Edge(id); err != nil {
			return err
		}
		for i, rid := range repoIDs {
			repo, err := tx.RepoByRef(rid)
			if err != nil {
				return apierr.Invalid("repository_ids", "no repository with id or name %q", rid).With("repository_id", rid)
			}
			ids[i] = repo.ID
		}
		return nil
	})
	repoIDs = ids
	if err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.EdgeAssign{ID: id, RepoIDs: repoIDs, At: a.now()})
	if err != nil {
		return nil, idx, err
	}
	v, err := a.GetEdgeNode(ctx, p, id)
	return v, idx, err
}

// UnassignRepository takes a repository from an edge node (administrators
// only).
func (a *App) UnassignRepository(ctx context.Context, p *auth.Principal, id, repoID string) (*EdgeNode, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	_ = a.view(func(tx *meta.Tx) error { // a name given is taken as its repository's id
		if repo, err := tx.RepoByRef(repoID); err == nil {
			repoID = repo.ID
		}
		return nil
	})
	idx, err := a.commit(ctx, &meta.EdgeUnassign{ID: id, RepoID: repoID, At: a.now()})
	if err != nil {
		return nil, idx, err
	}
	v, err := a.GetEdgeNode(ctx, p, id)
	return v, idx, err
}
