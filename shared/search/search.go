// Package search answers searches from a metadata store's indexes (names,
// trigrams, file names, package terms, checksums), so an origin and an
// edge answer alike from what they hold. Every answer is narrowed to the
// repositories the caller may read, given as their ids (auth.Readable),
// before it is cut to its limit, and every search examines a bounded
// number of index entries whatever the store's size.
//
// # Quick search and its scores
//
// A quick search looks in tiers, best first, and stops once it has its
// limit; a score says which tier a result came from (and, within a tier,
// how much of the name the query covers):
//
//	1.00       version: "name@version", "name version" or "name:version" names one
//	1.00       package: its name is the query (letter case aside)
//	0.95       artifact: its file name (the last element of its path) is the query
//	0.60-0.90  package: its name starts with the query
//	0.55       package: a keyword, licence or word of its description is the query
//	0.45-0.50  artifact: its file name starts with the query
//	0.30-0.45  package: its name contains the query (queries of 3 bytes or more)
//	0.20-0.30  package: a keyword or word of its description starts with the query (3 bytes or more)
//
// Within the ranged tiers the score grows with len(query)/len(name), so
// the closest names come first.
package search

import (
	"path"
	"sort"
	"strings"

	"github.com/depot-registry/depot/shared/meta"
)

// Result is one search result: the spec's fields (type, name, version,
// repository, score), then what a caller needs to go on.
type Result struct {
	Type         string  `json:"type"` // package, version or artifact
	Name         string  `json:"name"` // the package's name; an artifact's file name
	Version      string  `json:"version"`
	Repository   string  `json:"repository"` // its name
	Score        float64 `json:"score"`
	RepositoryID string  `json:"repository_id"`
	Format       string  `json:"format"`
	// Package is an artifact's package name; ArtifactID and Path are a
	// version's main file or the artifact found.
	Package    string `json:"package,omitempty"`
	ArtifactID string `json:"artifact_id,omitempty"`
	Path       string `json:"path,omitempty"`
	Summary    string `json:"summary,omitempty"`
	// Match says what matched: name, name_prefix, name_contains,
	// file_name, file_name_prefix, term, term_prefix, version.
	Match string `json:"match"`
	// UploadedAt is a version's or an artifact's upload time (RFC 3339).
	UploadedAt string `json:"uploaded_at,omitempty"`
	SizeBytes  int64  `json:"size_bytes,omitempty"`
}

// Bounds.
const (
	MaxQuery = 256 // bytes of a query
	MaxLimit = 100 // results of one quick search or suggest, a page of an advanced one
	// maxExamined bounds the index entries one search reads.
	maxExamined = 200_000
	// widen: a ranged tier scores this many times the results it may
	// still add, to keep the best.
	widen = 4
)

// searcher is one search's state: its caller's scope, what it found,
// and its budget of index entries.
type searcher struct {
	tx       *meta.Tx
	readable map[string]bool
	repos    map[string]*meta.Repository
	seen     map[string]bool
	out      []Result
	limit    int
	budget   int
	// bare results say what matched and nothing more (the advanced
	// search reads their versions itself).
	bare bool
}

func newSearcher(tx *meta.Tx, readable []string, limit int) *searcher {
	r := make(map[string]bool, len(readable))
	for _, id := range readable {
		r[id] = true
	}
	return &searcher{tx: tx, readable: r, repos: map[string]*meta.Repository{}, seen: map[string]bool{}, limit: limit,
		budget: maxExamined}
}

// spend takes one index entry from the budget: false when it is spent.
func (s *searcher) spend() bool {
	s.budget--
	return s.budget >= 0
}

// Exhausted reports whether the search stopped for its budget.
func (s *searcher) exhausted() bool { return s.budget < 0 }

func (s *searcher) full() bool { return len(s.out) >= s.limit }

// repo is a readable repository (nil: not readable, or gone).
func (s *searcher) repo(id string) *meta.Repository {
	if !s.readable[id] {
		return nil
	}
	r, ok := s.repos[id]
	if !ok {
		r, _ = s.tx.Repo(id)
		s.repos[id] = r
	}
	return r
}

// candidate is a match not yet made into a result.
type candidate struct {
	typ, repo, name, version, id, match string
	score                               float64
}

func (c candidate) key() string {
	return c.typ + "\x00" + c.repo + "\x00" + c.name + "\x00" + c.version + "\x00" + c.id
}

// take adds the best of cands (already found ones aside) until the
// search has its limit.
func (s *searcher) take(cands []candidate) {
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	for _, c := range cands {
		if s.full() {
			return
		}
		if s.seen[c.key()] {
			continue
		}
		if r, ok := s.result(c); ok {
			s.seen[c.key()] = true
			s.out = append(s.out, r)
		}
	}
}

// want reports how many more candidates a tier should gather.
func (s *searcher) want() int { return (s.limit - len(s.out)) * widen }

// result makes a candidate a result: false when what it names is gone.
func (s *searcher) result(c candidate) (Result, bool) {
	r := s.repo(c.repo)
	if r == nil {
		return Result{}, false
	}
	out := Result{Type: c.typ, Name: c.name, Version: c.version, Repository: r.Name, RepositoryID: r.ID, Format: r.Format,
		Score: round(c.score), Match: c.match}
	if s.bare {
		return out, true
	}
	switch c.typ {
	case "artifact":
		a, err := s.tx.Artifact(c.id)
		if err != nil {
			return out, false
		}
		out.Name, out.Version, out.Package, out.ArtifactID, out.Path = path.Base(a.Path), a.Version, a.PackageName, a.ID, a.Path
		out.UploadedAt, out.SizeBytes = a.UploadedAt.UTC().Format(timeFormat), a.SizeBytes
	default:
		p, ok := s.tx.Package(c.repo, c.name)
		if !ok {
			return out, false
		}
		if c.typ == "package" {
			out.Version = p.LatestVersion
		}
		if v, ok := s.tx.Version(c.repo, c.name, out.Version); ok {
			out.ArtifactID, out.SizeBytes, out.UploadedAt = v.ArtifactID, v.SizeBytes, v.UploadedAt.Format(timeFormat)
		}
		if info := s.tx.PackageInfoOf(c.repo, c.name); info != nil {
			out.Summary = info.Summary
		}
	}
	return out, true
}

const timeFormat = "2006-01-02T15:04:05Z07:00"

func round(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

// ranged is a score in [lo, hi] growing with how much of name q covers.
func ranged(lo, hi float64, q, name string) float64 {
	if len(name) == 0 {
		return lo
	}
	return lo + (hi-lo)*float64(len(q))/float64(len(name))
}

// Quick is a quick search for q: at most limit results, best first
// (see the package documentation for the tiers and scores). q is
// trimmed; an empty q finds nothing.
func Quick(tx *meta.Tx, readable []string, q string, limit int) []Result {
	q = strings.TrimSpace(q)
	lq := strings.ToLower(q)
	s := newSearcher(tx, readable, limit)
	if q == "" {
		return []Result{}
	}
	s.versions(q)
	s.tiers(lq, true)
	if s.out == nil {
		return []Result{}
	}
	return s.out
}

// tier is one tier of the search: what it looks in (package names, file
// names, terms, or name substrings), whole or by prefix, its scores and
// the match it reports.
type tier struct {
	in       string // name, file, term, contains
	exact    bool
	lo, hi   float64
	match    string
	minQuery int // bytes a query needs for this tier
}

// tierList is the quick search's, best first (the package comment's
// table).
var tierList = []tier{
	{"name", true, 1, 1, "name", 0},
	{"file", true, 0.95, 0.95, "file_name", 0},
	{"name", false, 0.6, 0.9, "name_prefix", 0},
	{"term", true, 0.55, 0.55, "term", 0},
	{"file", false, 0.45, 0.5, "file_name_prefix", 0},
	{"contains", false, 0.3, 0.45, "name_contains", gramQuery},
	{"term", false, 0.2, 0.3, "term_prefix", gramQuery},
}

// gramQuery is the shortest query the substring and term-prefix tiers
// take.
const gramQuery = 3

// tiers searches the tiers for lq, best first, until the search has its
// limit; files: the file-name tiers too.
func (s *searcher) tiers(lq string, files bool) {
	for _, t := range tierList {
		switch {
		case len(lq) < t.minQuery || t.in == "file" && !files:
		case t.in == "name":
			s.packages(lq, t.exact, t.lo, t.hi, t.match)
		case t.in == "file":
			s.files(lq, t.exact, t.lo, t.hi, t.match)
		case t.in == "term":
			s.terms(lq, t.exact, t.lo, t.hi, t.match)
		case t.in == "contains":
			s.containing(lq, t.lo, t.hi)
		}
	}
}

// versions finds the version q names as "name@version", "name version"
// or "name:version" (the last such separator; an npm scope's leading @
// is not one).
func (s *searcher) versions(q string) {
	i := strings.LastIndexAny(q, "@ :")
	if i <= 0 || i == len(q)-1 {
		return
	}
	name, version := strings.TrimSpace(q[:i]), strings.TrimSpace(q[i+1:])
	var cands []candidate
	s.tx.PackagesByName(strings.ToLower(name), true, func(repo, pkg string) bool {
		if s.spend() && len(cands) < s.want() {
			if _, ok := s.tx.Version(repo, pkg, version); ok && s.readable[repo] {
				cands = append(cands, candidate{typ: "version", repo: repo, name: pkg, version: version, match: "version", score: 1})
			}
			return true
		}
		return false
	})
	s.take(cands)
}

// packages finds the packages named lq (exact) or whose name starts with it.
func (s *searcher) packages(lq string, exact bool, lo, hi float64, match string) {
	if s.full() {
		return
	}
	var cands []candidate
	s.tx.PackagesByName(lq, exact, func(repo, name string) bool {
		if !s.spend() || len(cands) >= s.want() {
			return false
		}
		if s.readable[repo] {
			cands = append(cands, candidate{typ: "package", repo: repo, name: name, match: match, score: ranged(lo, hi, lq, name)})
		}
		return true
	})
	s.take(cands)
}

// containing finds the packages whose name contains lq.
func (s *searcher) containing(lq string, lo, hi float64) {
	if s.full() {
		return
	}
	var cands []candidate
	s.tx.PackagesContaining(lq, func(repo, name string) bool {
		if !s.spend() || len(cands) >= s.want() {
			return false
		}
		if s.readable[repo] {
			cands = append(cands, candidate{typ: "package", repo: repo, name: name, match: "name_contains", score: ranged(lo, hi, lq, name)})
		}
		return true
	})
	s.take(cands)
}

// files finds the artifacts whose file name is lq, or starts with it.
func (s *searcher) files(lq string, exact bool, lo, hi float64, match string) {
	if s.full() {
		return
	}
	var cands []candidate
	s.tx.FilesByName(lq, exact, func(repo, id, name string) bool {
		if !s.spend() || len(cands) >= s.want() {
			return false
		}
		if s.readable[repo] {
			cands = append(cands, candidate{typ: "artifact", repo: repo, name: name, id: id, match: match, score: ranged(lo, hi, lq, name)})
		}
		return true
	})
	s.take(cands)
}

// terms finds the packages with a term that is lq, or starts with it.
func (s *searcher) terms(lq string, exact bool, lo, hi float64, match string) {
	if s.full() {
		return
	}
	var cands []candidate
	s.tx.PackagesByTerm(lq, exact, func(term, repo, name string) bool {
		if !s.spend() || len(cands) >= s.want() {
			return false
		}
		if s.readable[repo] {
			cands = append(cands, candidate{typ: "package", repo: repo, name: name, match: match, score: ranged(lo, hi, lq, term)})
		}
		return true
	})
	s.take(cands)
}
