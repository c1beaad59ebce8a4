package app

import (
	"context"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/search"
)

// maxChecksumResults bounds a checksum search's answer (the same bytes
// stored in that many places is a rarity).
const maxChecksumResults = 1000

// DefaultQuickLimit is a quick search's and a suggestion's limit when the
// caller gives none (the spec's 10).
const DefaultQuickLimit = 10

// checksumAlgorithm is the algorithm a hex checksum of that length is.
func checksumAlgorithm(hex string) (string, bool) {
	for _, r := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return "", false
		}
	}
	switch len(hex) {
	case 32:
		return "md5", true
	case 40:
		return "sha1", true
	case 64:
		return "sha256", true
	}
	return "", false
}

// SearchChecksum finds the artifacts p may read whose MD5, SHA-1 or
// SHA-256 (told apart by the checksum's length) is checksum, exactly: the
// algorithm and the artifacts, with their repositories' names.
func (a *App) SearchChecksum(_ context.Context, p *auth.Principal, checksum string) (string, []format.ArtifactView, error) {
	algo, ok := checksumAlgorithm(checksum)
	if !ok {
		return "", nil, apierr.Invalid("checksum", "checksum must be an MD5 (32), SHA-1 (40) or SHA-256 (64) in hexadecimal")
	}
	out := []format.ArtifactView{}
	err := a.view(func(tx *meta.Tx) error {
		readable, err := auth.Readable(tx, p)
		if err != nil {
			return err
		}
		for _, art := range search.Checksum(tx, readable, algo, checksum, maxChecksumResults) {
			if repo, err := tx.Repo(art.RepositoryID); err == nil {
				out = append(out, format.ViewArtifact(art, repo.Name))
			}
		}
		return nil
	})
	return algo, out, err
}

// checkQuery validates a search's text and limit (0: the default).
func checkQuery(q string, limit int, required bool) (int, error) {
	switch {
	case required && strings.TrimSpace(q) == "":
		return 0, apierr.Invalid("q", "q is required: the text to search for")
	case len(q) > search.MaxQuery:
		return 0, apierr.Invalid("q", "q is longer than %d bytes", search.MaxQuery)
	case limit < 0 || limit > search.MaxLimit:
		return 0, apierr.Invalid("limit", "limit must be an integer from 1 to %d", search.MaxLimit)
	case limit == 0:
		return DefaultQuickLimit, nil
	}
	return limit, nil
}

// QuickSearch finds packages, versions and artifact files by q, among
// what p may read: at most limit, best first (shared/search).
func (a *App) QuickSearch(_ context.Context, p *auth.Principal, q string, limit int) ([]search.Result, error) {
	limit, err := checkQuery(q, limit, true)
	if err != nil {
		return nil, err
	}
	var out []search.Result
	err = a.view(func(tx *meta.Tx) error {
		readable, err := auth.Readable(tx, p)
		out = search.Quick(tx, readable, q, limit)
		return err
	})
	return out, err
}

// Suggest completes a partial query from the package names and terms p
// may see.
func (a *App) Suggest(_ context.Context, p *auth.Principal, q string, limit int) ([]search.Suggestion, error) {
	limit, err := checkQuery(q, limit, true)
	if err != nil {
		return nil, err
	}
	var out []search.Suggestion
	err = a.view(func(tx *meta.Tx) error {
		readable, err := auth.Readable(tx, p)
		out = search.Suggest(tx, readable, q, limit)
		return err
	})
	return out, err
}

// AdvancedQuery is an advanced search as a caller asks it.
type AdvancedQuery struct {
	Query, Format, Repository string
	// MinDate and MaxDate are ISO dates (2026-01-02) or times (RFC 3339):
	// uploaded at or after MinDate, before MaxDate (a date: before the
	// end of that day, so that the day is included).
	MinDate, MaxDate string
	Page             Page
}

// AdvancedResult is a page of an advanced search.
type AdvancedResult struct {
	Results   []search.Result
	Total     int
	Page      Page
	Truncated bool
}

// parseDate reads an ISO date or an RFC 3339 time; end moves a date to
// the start of the next day.
func parseDate(field, v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return t, apierr.Invalid(field, "%s must be an ISO date (2026-01-02) or an RFC 3339 time", field)
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// AdvancedSearch lists the versions matching q among what p may read.
func (a *App) AdvancedSearch(_ context.Context, p *auth.Principal, in AdvancedQuery) (AdvancedResult, error) {
	out := AdvancedResult{Page: in.Page.clamped(), Results: []search.Result{}}
	if _, err := checkQuery(in.Query, 0, false); err != nil {
		return out, apierr.Invalid("query", "query is longer than %d bytes", search.MaxQuery)
	}
	if in.Format != "" && !all.Known(in.Format) {
		return out, apierr.Invalid("format", "unknown format %q; known: %s", in.Format, strings.Join(all.Names(), ", "))
	}
	after, err := parseDate("min_date", in.MinDate, false)
	if err != nil {
		return out, err
	}
	before, err := parseDate("max_date", in.MaxDate, true)
	if err != nil {
		return out, err
	}
	if !after.IsZero() && !before.IsZero() && !after.Before(before) {
		return out, apierr.Invalid("max_date", "max_date must be after min_date")
	}
	q := search.Query{Text: in.Query, Format: in.Format, After: after, Before: before,
		Offset: (out.Page.Number - 1) * out.Page.Limit, Limit: out.Page.Limit}
	err = a.view(func(tx *meta.Tx) error {
		readable, err := auth.Readable(tx, p)
		if err != nil {
			return err
		}
		if in.Repository != "" {
			repo, err := RepoAccess(tx, p, in.Repository, meta.ActionRead)
			if err != nil {
				return err
			}
			q.RepoID = repo.ID
		}
		pg := search.Advanced(tx, readable, q)
		out.Results, out.Total, out.Truncated = pg.Results, pg.Total, pg.Truncated
		return nil
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
