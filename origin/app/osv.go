package app

import (
	"context"
	"fmt"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/vuln"
)

// The advisory database answers OSV's own query API (osv.dev's
// POST /v1/query and /v1/querybatch), so tools that query OSV and take
// its address as a setting ask the registry instead, offline: pip-audit's
// --osv-url (PIP_AUDIT_OSV_URL), for one.

// OSVQuery is one query: a package, by name and OSV ecosystem, at a
// version.
type OSVQuery struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
		Purl      string `json:"purl,omitempty"`
	} `json:"package"`
	Version string `json:"version"`
}

// OSVVulns is the answer to a query: the records that affect the package
// at the version (none: the field is left out, as osv.dev does).
type OSVVulns struct {
	Vulns []vuln.Advisory `json:"vulns,omitempty"`
}

// OSVBatch is a batch of queries, and OSVBatchResults its answer: for
// each query, the ids and modification times of the records that affect
// it, as osv.dev answers a batch.
type OSVBatch struct {
	Queries []OSVQuery `json:"queries"`
}

type OSVBatchResults struct {
	Results []OSVIDs `json:"results"`
}

// OSVIDs is a batch query's answer.
type OSVIDs struct {
	Vulns []OSVID `json:"vulns,omitempty"`
}

// OSVID names a record.
type OSVID struct {
	ID       string `json:"id"`
	Modified string `json:"modified"`
}

// MaxOSVBatch bounds the queries of one batch (osv.dev's bound).
const MaxOSVBatch = 1000

// QueryOSV answers an OSV query from the advisory database in force. An
// ecosystem the database holds no advisories of is 503, never an empty
// answer a tool would read as "no known vulnerabilities".
func (a *App) QueryOSV(ctx context.Context, _ *auth.Principal, q OSVQuery) (OSVVulns, error) {
	db, err := a.osvDB(ctx)
	if err != nil {
		return OSVVulns{}, err
	}
	found, err := osvMatch(db, q, "")
	if err != nil {
		return OSVVulns{}, err
	}
	out := OSVVulns{}
	for _, f := range found {
		if rec, ok := db.Advisory(f.ID); ok {
			out.Vulns = append(out.Vulns, *rec)
		}
	}
	return out, nil
}

// QueryOSVBatch answers a batch of OSV queries (at most MaxOSVBatch).
func (a *App) QueryOSVBatch(ctx context.Context, _ *auth.Principal, b OSVBatch) (OSVBatchResults, error) {
	if len(b.Queries) == 0 || len(b.Queries) > MaxOSVBatch {
		return OSVBatchResults{}, apierr.Invalid("queries", "from 1 to %d queries", MaxOSVBatch)
	}
	db, err := a.osvDB(ctx)
	if err != nil {
		return OSVBatchResults{}, err
	}
	out := OSVBatchResults{Results: make([]OSVIDs, len(b.Queries))}
	for i, q := range b.Queries {
		found, err := osvMatch(db, q, fmt.Sprintf("queries[%d].", i))
		if err != nil {
			return OSVBatchResults{}, err
		}
		for _, f := range found {
			if rec, ok := db.Advisory(f.ID); ok {
				out.Results[i].Vulns = append(out.Results[i].Vulns, OSVID{ID: rec.ID, Modified: rec.Modified.UTC().Format("2006-01-02T15:04:05Z")})
			}
		}
	}
	return out, nil
}

func (a *App) osvDB(ctx context.Context) (*vuln.DB, error) {
	if a.Scans == nil {
		return nil, apierr.New(apierr.Unavailable, "the advisory database is not available on this node")
	}
	db, _, err := a.Scans.Database(ctx)
	if err != nil {
		return nil, err
	}
	if db.Len() == 0 {
		return nil, apierr.New(apierr.Unavailable, "no advisories are loaded (POST /api/v1/security/advisories)").WithReason()
	}
	return db, nil
}

// osvMatch checks a query (field names prefixed with at) and matches it.
func osvMatch(db *vuln.DB, q OSVQuery, at string) ([]vuln.Finding, error) {
	p := q.Package
	switch {
	case p.Purl != "" && p.Name == "":
		return nil, apierr.Invalid(at+"package.purl", "queries by purl are not answered here: give package.name and package.ecosystem")
	case p.Name == "" || len(p.Name) > 512:
		return nil, apierr.Invalid(at+"package.name", "a package name of at most 512 bytes is required")
	case p.Ecosystem == "" || len(p.Ecosystem) > 64:
		return nil, apierr.Invalid(at+"package.ecosystem", "an OSV ecosystem (PyPI, npm, Go, Maven...) is required")
	case q.Version == "" || len(q.Version) > 256:
		return nil, apierr.Invalid(at+"version", "a version of at most 256 bytes is required (commit queries are not answered here)")
	case !db.Covers(p.Ecosystem):
		// In the status line too: tools show it, not the body.
		return nil, apierr.New(apierr.Unavailable, "no advisory data loaded for %s: an answer would wrongly say it has none", p.Ecosystem).WithReason()
	}
	found, err := db.Match(p.Ecosystem, p.Name, q.Version)
	if err != nil {
		return nil, apierr.Invalid(at+"version", "%v", err)
	}
	return found, nil
}
