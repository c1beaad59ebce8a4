package app

import (
	"context"
	"net/url"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/search"
)

// Search answers the search kind (quick, advanced, checksum, suggest)
// the query asks, among what p may read: the answer is the kind's body
// (search.QuickAnswer, search.AdvancedAnswer, search.ChecksumAnswer,
// search.SuggestAnswer). Edges answer from their replica with the same
// search.Serve.
func (a *App) Search(_ context.Context, p *auth.Principal, kind string, q url.Values) (any, error) {
	var out any
	err := a.view(func(tx *meta.Tx) error {
		var err error
		out, err = search.Serve(tx, search.CallerOf(tx, p, func(ref string) (*meta.Repository, error) {
			return RepoAccess(tx, p, ref, meta.ActionRead)
		}), kind, q)
		return err
	})
	return out, err
}

// PackageInfo is what a package of a repository p may read says of
// itself (nil: not inspected yet).
func (a *App) PackageInfo(_ context.Context, p *auth.Principal, repository, name string) (*meta.PackageInfo, error) {
	var out *meta.PackageInfo
	err := a.view(func(tx *meta.Tx) error {
		repo, err := RepoAccess(tx, p, repository, meta.ActionRead)
		if err != nil {
			return err
		}
		out = tx.PackageInfoOf(repo.ID, name)
		return nil
	})
	return out, err
}

// ReindexStatus is the search index's state: the reindex running or last
// finished (nil: none yet), and how far the indexer has read the change
// feed (Cursor) of what the store has applied (Applied).
type ReindexStatus struct {
	Reindex *meta.Reindex `json:"reindex"`
	Cursor  uint64        `json:"cursor"`
	Applied uint64        `json:"applied"`
}

// ReindexState reads the index's state (admin only).
func (a *App) ReindexState(_ context.Context, p *auth.Principal) (ReindexStatus, error) {
	var out ReindexStatus
	if err := requireAdmin(p); err != nil {
		return out, err
	}
	err := a.view(func(tx *meta.Tx) error {
		st := tx.Indexer()
		out = ReindexStatus{Reindex: st.Reindex, Cursor: st.Cursor, Applied: tx.Applied()}
		return nil
	})
	return out, err
}

// StartReindex begins reading every artifact again (admin only; one at a
// time across the cluster: a conflict while one runs). Searches keep
// answering from what is indexed meanwhile.
func (a *App) StartReindex(ctx context.Context, p *auth.Principal) (ReindexStatus, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return ReindexStatus{}, 0, err
	}
	var total int
	_ = a.view(func(tx *meta.Tx) error { total = tx.Count(meta.KindArtifact); return nil })
	idx, err := a.commit(ctx, &meta.ReindexStart{By: p.Username, At: a.now(), Total: total})
	if err != nil {
		return ReindexStatus{}, idx, err
	}
	st, err := a.ReindexState(ctx, p)
	return st, idx, err
}
