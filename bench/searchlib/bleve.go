package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/ngram"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/depot-registry/depot/shared/meta"
)

// The library's index holds one document a package and one an artifact,
// every field indexed whole (a keyword), nothing stored:
//
//	package  id "p" + repository id + name
//	         name   (lower case)   exact, prefix, wildcard
//	         terms  (as the store's PackageInfo.Terms makes them; with doc
//	                values, for the facet that suggests terms)
//	         repo   (repository id) the readable filter
//	artifact id "a" + artifact id
//	         file   (lower-case file name) exact, prefix
//	         sha256
//	         repo
//
// The ngram index is a second index of the packages alone, whose gram
// field holds the trigrams of the lower-case name: a substring query is
// the conjunction of its trigrams, checked against the name, as Depot's
// trigram index does it.

const (
	lowerKeyword = "lower_keyword"
	trigrams     = "trigrams"
)

func field(analyzer string, docValues bool) *mapping.FieldMapping {
	f := bleve.NewKeywordFieldMapping()
	f.Analyzer, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = analyzer, false, false, false, docValues
	return f
}

func newMapping(ngrams bool) (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer(lowerKeyword, map[string]any{"type": custom.Name, "tokenizer": single.Name,
		"token_filters": []any{lowercase.Name}}); err != nil {
		return nil, err
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("repo", field(keyword.Name, false))
	if ngrams {
		if err := im.AddCustomTokenFilter("gram3", map[string]any{"type": ngram.Name, "min": 3.0, "max": 3.0}); err != nil {
			return nil, err
		}
		if err := im.AddCustomAnalyzer(trigrams, map[string]any{"type": custom.Name, "tokenizer": single.Name,
			"token_filters": []any{lowercase.Name, "gram3"}}); err != nil {
			return nil, err
		}
		dm.AddFieldMappingsAt("gram", field(trigrams, false))
	} else {
		dm.AddFieldMappingsAt("name", field(lowerKeyword, false))
		dm.AddFieldMappingsAt("terms", field(keyword.Name, true))
		dm.AddFieldMappingsAt("file", field(lowerKeyword, false))
		dm.AddFieldMappingsAt("sha256", field(keyword.Name, false))
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = keyword.Name
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	return im, nil
}

func pkgID(repo, name string) string { return "p" + repo + name }

// splitPkgID undoes pkgID (repository ids are 32 bytes).
func splitPkgID(id string) (repo, name string) { return id[1:33], id[33:] }

// buildBleve indexes the data set at path, one batch of the library's
// for each command the store applied, and waits for the index to have
// persisted and merged its segments: the durations are the indexing and
// the wait.
func buildBleve(path string, g *generator, ngrams bool) (bleve.Index, time.Duration, time.Duration, error) {
	im, err := newMapping(ngrams)
	if err != nil {
		return nil, 0, 0, err
	}
	start := time.Now()
	idx, err := bleve.New(path, im)
	if err != nil {
		return nil, 0, 0, err
	}
	what, done := "bleve", 0
	if ngrams {
		what = "bleve-ngram"
	}
	err = g.each(nil, func(b *batch) error {
		bt := idx.NewBatch()
		if !ngrams {
			for i := range b.Put {
				a := &b.Put[i]
				if err := bt.Index("a"+a.ID, map[string]any{"file": fileName(a.Path), "sha256": a.Checksums.SHA256,
					"repo": a.RepositoryID}); err != nil {
					return err
				}
			}
		}
		for _, p := range b.Pkgs {
			doc := map[string]any{"repo": p.Repo}
			if ngrams {
				doc["gram"] = p.Name
			} else {
				doc["name"], doc["terms"] = p.Name, p.Terms
			}
			if err := bt.Index(pkgID(p.Repo, p.Name), doc); err != nil {
				return err
			}
		}
		done += len(b.Put)
		progress(what, done, g.artifacts)
		return idx.Batch(bt)
	})
	if err != nil {
		idx.Close()
		return nil, 0, 0, err
	}
	indexing := time.Since(start)
	return idx, indexing, settle(idx), nil
}

// settle waits (at most two minutes) until the index holds no segment in
// memory and its segments and files have not changed for two seconds; it
// returns how long the index took to get there (the two seconds of
// watching aside).
func settle(idx bleve.Index) time.Duration {
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	last, changed := "", start
	for time.Now().Before(deadline) {
		m, _ := idx.StatsMap()["index"].(map[string]any)
		now := fmt.Sprint(m["num_root_memorysegments"], "/", m["num_root_filesegments"], "/", m["num_files_on_disk"])
		switch {
		case now != last:
			last, changed = now, time.Now()
		case fmt.Sprint(m["num_root_memorysegments"]) == "0" && time.Since(changed) >= 2*time.Second:
			return changed.Sub(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// segments is how many file segments the index's root holds.
func segments(idx bleve.Index) string {
	m, _ := idx.StatsMap()["index"].(map[string]any)
	return fmt.Sprint(m["num_root_filesegments"])
}

func fileName(p string) string { return strings.ToLower(p[strings.LastIndex(p, "/")+1:]) }

// bleveEngine answers the measured questions from the library's indexes
// (and, where Depot's answer is made of records, reads those records
// from the store as Depot would have to).
type bleveEngine struct {
	idx, grams bleve.Index
	st         *meta.Store
	// deny, when set, narrows a user's searches by the repositories the
	// user may not read instead of those the user may.
	deny []string
}

// filtered narrows q to the readable repositories (nil: all, an admin)
// with the unscored filter of a boolean query: a disjunction of one term
// query on the repository field per readable repository, or, with a deny
// list, a must-not of one per repository the user may not read.
func (e bleveEngine) filtered(q query.Query, readable []string) query.Query {
	if readable == nil {
		return q
	}
	ids := readable
	if e.deny != nil {
		ids = e.deny
	}
	terms := make([]query.Query, len(ids))
	for i, id := range ids {
		terms[i] = on("repo", 0, bleve.NewTermQuery(id))
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(q)
	if e.deny != nil {
		b.AddMustNot(bleve.NewDisjunctionQuery(terms...))
	} else {
		b.AddFilter(bleve.NewDisjunctionQuery(terms...))
	}
	return b
}

// hits are the ids of the first size hits of q: the best scored when
// scored, else in whatever order the index finds them (the single-index
// questions need no order, as Depot's index order is none either).
func (e bleveEngine) hits(idx bleve.Index, q query.Query, readable []string, size int, scored bool) []string {
	req := bleve.NewSearchRequestOptions(e.filtered(q, readable), size, 0, false)
	if !scored {
		req.Score = "none"
	}
	res, err := idx.Search(req)
	if err != nil {
		panic(err)
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

type fieldQuery interface {
	query.Query
	SetField(string)
	SetBoost(float64)
}

func on(f string, boost float64, q fieldQuery) query.Query {
	q.SetField(f)
	if boost != 0 {
		q.SetBoost(boost)
	}
	return q
}

// quickQuery asks for the quick search's tiers at once, boosted in their
// order: exact name, exact file name, name prefix, exact term, file name
// prefix, name substring (a wildcard query) and term prefix.
func quickQuery(lq string) query.Query {
	qs := []query.Query{
		on("name", 10, bleve.NewTermQuery(lq)),
		on("file", 9.5, bleve.NewTermQuery(lq)),
		on("name", 7.5, bleve.NewPrefixQuery(lq)),
		on("terms", 5.5, bleve.NewTermQuery(lq)),
		on("file", 4.7, bleve.NewPrefixQuery(lq)),
	}
	if len(lq) >= 3 {
		qs = append(qs, on("name", 3.7, bleve.NewWildcardQuery("*"+lq+"*")), on("terms", 2.5, bleve.NewPrefixQuery(lq)))
	}
	return bleve.NewDisjunctionQuery(qs...)
}

// quick is the quick search: the library's ten best hits, made into
// results from the store's records (what search.Quick reads for each).
func (e bleveEngine) quick(readable []string, q string) int {
	lq := strings.ToLower(strings.TrimSpace(q))
	ids := e.hits(e.idx, quickQuery(lq), readable, limit, true)
	n := 0
	_ = e.st.View(func(tx *meta.Tx) error {
		for _, id := range ids {
			if id[0] == 'a' {
				a, err := tx.Artifact(id[1:])
				if err != nil {
					continue
				}
				if r, _ := tx.Repo(a.RepositoryID); r != nil {
					n++
				}
				continue
			}
			repo, name := splitPkgID(id)
			r, _ := tx.Repo(repo)
			p, ok := tx.Package(repo, name)
			if r == nil || !ok {
				continue
			}
			tx.Version(repo, name, p.LatestVersion)
			tx.PackageInfoOf(repo, name)
			n++
		}
		return nil
	})
	return n
}

// suggest: the names that start with q (from the ids of up to four times
// the limit of package hits, shortest first), then the terms that do,
// from a facet on the terms of the packages with such a term (a facet
// counts every term of the matching packages, so it is asked for many
// and cut to those that start with q).
func (e bleveEngine) suggest(readable []string, q string) int {
	lq := strings.ToLower(strings.TrimSpace(q))
	seen := map[string]bool{}
	var names []string
	for _, id := range e.hits(e.idx, on("name", 0, bleve.NewPrefixQuery(lq)), readable, limit*4, false) {
		if _, name := splitPkgID(id); !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return len(names[i]) < len(names[j]) })
	n := min(len(names), limit)
	req := bleve.NewSearchRequestOptions(e.filtered(on("terms", 0, bleve.NewPrefixQuery(lq)), readable), 0, 0, false)
	req.Score = "none"
	req.AddFacet("terms", bleve.NewFacetRequest("terms", 100))
	res, err := e.idx.Search(req)
	if err != nil {
		panic(err)
	}
	if f := res.Facets["terms"]; f != nil {
		for _, t := range f.Terms.Terms() {
			if n < limit && strings.HasPrefix(t.Term, lq) && !seen[t.Term] {
				seen[t.Term] = true
				n++
			}
		}
	}
	return n
}

// checksum: the artifacts whose sha256 is hex, read from the store as
// search.Checksum returns them.
func (e bleveEngine) checksum(readable []string, hex string) int {
	ids := e.hits(e.idx, on("sha256", 0, bleve.NewTermQuery(strings.ToLower(hex))), readable, limit, false)
	n := 0
	_ = e.st.View(func(tx *meta.Tx) error {
		for _, id := range ids {
			if _, err := tx.Artifact(id[1:]); err == nil {
				n++
			}
		}
		return nil
	})
	return n
}

// The single-index questions, as one query of the library's each.

func (e bleveEngine) names(readable []string, q string, exact bool) int {
	if exact {
		return len(e.hits(e.idx, on("name", 0, bleve.NewTermQuery(q)), readable, limit, false))
	}
	return len(e.hits(e.idx, on("name", 0, bleve.NewPrefixQuery(q)), readable, limit, false))
}

func (e bleveEngine) containing(readable []string, q string) int {
	return len(e.hits(e.idx, on("name", 0, bleve.NewWildcardQuery("*"+q+"*")), readable, limit, false))
}

// containingGrams asks the ngram index for the packages holding every
// trigram of q, four times the limit of them, and keeps those whose name
// holds q itself.
func (e bleveEngine) containingGrams(readable []string, q string) int {
	var qs []query.Query
	seen := map[string]bool{}
	for i := 0; i+3 <= len(q); i++ {
		if g := q[i : i+3]; !seen[g] {
			seen[g] = true
			qs = append(qs, on("gram", 0, bleve.NewTermQuery(g)))
		}
	}
	n := 0
	for _, id := range e.hits(e.grams, bleve.NewConjunctionQuery(qs...), readable, limit*4, false) {
		if _, name := splitPkgID(id); n < limit && strings.Contains(strings.ToLower(name), q) {
			n++
		}
	}
	return n
}

func (e bleveEngine) terms(readable []string, q string, exact bool) int {
	if exact {
		return len(e.hits(e.idx, on("terms", 0, bleve.NewTermQuery(q)), readable, limit, false))
	}
	return len(e.hits(e.idx, on("terms", 0, bleve.NewPrefixQuery(q)), readable, limit, false))
}

func (e bleveEngine) files(readable []string, q string, exact bool) int {
	if exact {
		return len(e.hits(e.idx, on("file", 0, bleve.NewTermQuery(q)), readable, limit, false))
	}
	return len(e.hits(e.idx, on("file", 0, bleve.NewPrefixQuery(q)), readable, limit, false))
}
