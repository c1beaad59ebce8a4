package search

import (
	"sort"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Suggestion is one completion of a partial query: a package name, or a
// term (keyword, licence, word of a description) packages are found by.
type Suggestion struct {
	Text string `json:"text"`
	Type string `json:"type"` // package or term
}

// Suggest completes the partial query q: the names of packages the
// caller may read that start with it (letter case aside), shortest and
// then alphabetically first, then the terms that do; at most limit, each
// text once.
func Suggest(tx *meta.Tx, readable []string, q string, limit int) []Suggestion {
	lq := strings.ToLower(strings.TrimSpace(q))
	out := []Suggestion{}
	if lq == "" {
		return out
	}
	s := newSearcher(tx, readable, limit)
	seen := map[string]bool{}
	var names []string
	s.tx.PackagesByName(lq, false, func(repo, name string) bool {
		if !s.spend() || len(names) >= limit*widen {
			return false
		}
		if s.readable[repo] && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		return true
	})
	sort.SliceStable(names, func(i, j int) bool { return len(names[i]) < len(names[j]) })
	for _, n := range names[:min(len(names), limit)] {
		out = append(out, Suggestion{Text: n, Type: "package"})
	}
	s.tx.PackagesByTerm(lq, false, func(term, repo, _ string) bool {
		if !s.spend() || len(out) >= limit {
			return false
		}
		if s.readable[repo] && !seen[term] {
			seen[term] = true
			out = append(out, Suggestion{Text: term, Type: "term"})
		}
		return true
	})
	return out
}

// Query is an advanced search: versions of packages, narrowed by each
// field that is set.
type Query struct {
	// Text matches package names (exact, prefix, substring) and terms
	// (exact, prefix), scored as a quick search scores them.
	Text   string
	Format string
	// RepoID narrows to one repository (already checked readable).
	RepoID string
	// After and Before bound the upload time: After <= t < Before.
	After, Before time.Time
	Offset, Limit int
}

// Page is a page of an advanced search: Total counts every match found;
// Truncated says the search stopped at its budget of index entries, so
// that more may match (narrow the query).
type Page struct {
	Results   []Result
	Total     int
	Truncated bool
}

// maxCandidates bounds the packages a text query considers.
const maxCandidates = 1000

// Advanced lists the versions that match q, best score first, then the
// newest upload, then by name and repository: the window [Offset,
// Offset+Limit) of them.
func Advanced(tx *meta.Tx, readable []string, q Query) Page {
	s := newSearcher(tx, readable, maxCandidates)
	s.bare = true // candidates: their versions are read below
	if q.RepoID != "" {
		s.readable = map[string]bool{}
		for _, id := range readable {
			if id == q.RepoID {
				s.readable[id] = true
			}
		}
	}
	if q.Format != "" {
		for id := range s.readable {
			if r := s.repo(id); r == nil || r.Format != q.Format {
				delete(s.readable, id)
			}
		}
	}
	type pkg struct {
		repo, name, match string
		score             float64
	}
	var pkgs []pkg
	if lq := strings.ToLower(strings.TrimSpace(q.Text)); lq != "" {
		// The package tiers of a quick search, gathering candidates
		// instead of results.
		s.tiers(lq, false)
		for _, r := range s.out {
			pkgs = append(pkgs, pkg{r.RepositoryID, r.Name, r.Match, r.Score})
		}
	} else {
		ids := make([]string, 0, len(s.readable))
		for id := range s.readable {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	all:
		for _, id := range ids {
			stop := false
			tx.PackageNames(id, func(name string) bool {
				if stop = !s.spend(); stop {
					return false
				}
				if !q.After.IsZero() {
					if p, ok := tx.Package(id, name); ok && p.LastUpdated.Before(q.After) {
						return true // no version uploaded since
					}
				}
				pkgs = append(pkgs, pkg{repo: id, name: name, match: "all", score: 0})
				return true
			})
			if stop {
				break all
			}
		}
	}
	var rows []Result
	for _, p := range pkgs {
		r := s.repo(p.repo)
		if r == nil {
			continue
		}
		vs, err := tx.Versions(p.repo, p.name)
		if err != nil {
			continue
		}
		for _, v := range vs {
			if !s.spend() {
				break
			}
			if (!q.After.IsZero() && v.UploadedAt.Before(q.After)) || (!q.Before.IsZero() && !v.UploadedAt.Before(q.Before)) {
				continue
			}
			rows = append(rows, Result{Type: "version", Name: p.name, Version: v.Version, Repository: r.Name, RepositoryID: r.ID,
				Format: r.Format, Score: p.score, Match: p.match, ArtifactID: v.ArtifactID, SizeBytes: v.SizeBytes,
				UploadedAt: v.UploadedAt.Format(timeFormat)})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch {
		case a.Score != b.Score:
			return a.Score > b.Score
		case a.UploadedAt != b.UploadedAt:
			return a.UploadedAt > b.UploadedAt
		case a.Name != b.Name:
			return a.Name < b.Name
		}
		return a.Repository < b.Repository
	})
	out := Page{Results: []Result{}, Total: len(rows), Truncated: s.exhausted()}
	if q.Offset < len(rows) {
		out.Results = rows[q.Offset:min(len(rows), q.Offset+q.Limit)]
	}
	return out
}

// Checksum finds the artifacts whose algorithm (md5, sha1, sha256)
// checksum is hex, of the repositories the caller may read (mayRead,
// asked once a repository): at most limit.
func Checksum(tx *meta.Tx, mayRead func(repoID string) bool, algorithm, hex string, limit int) []*meta.Artifact {
	var out []*meta.Artifact
	asked := map[string]bool{}
	for _, id := range tx.ArtifactsByChecksum(algorithm, hex, limit*widen) {
		a, err := tx.Artifact(id)
		if err != nil {
			continue // deleted in between
		}
		ok, seen := asked[a.RepositoryID]
		if !seen {
			ok = mayRead(a.RepositoryID)
			asked[a.RepositoryID] = ok
		}
		if !ok {
			continue
		}
		if out = append(out, a); len(out) >= limit {
			break
		}
	}
	return out
}
