package search_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/search"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// store holds two repositories, "open" (npm) and "closed" (pypi), with
// packages written as the formats write them and what they say of
// themselves as the indexer records it.
type store struct {
	t   *testing.T
	s   *meta.Store
	idx uint64
}

func newStore(t *testing.T) *store {
	s, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := &store{t: t, s: s}
	st.apply(&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "open", Format: "npm", Public: true, CreatedAt: t0}})
	st.apply(&meta.RepoCreate{Repo: meta.Repository{ID: "r2", Name: "closed", Format: "pypi", CreatedAt: t0}})
	return st
}

func (st *store) apply(c meta.Command) {
	st.t.Helper()
	st.idx++
	if err := st.s.Apply(st.idx, c); err != nil {
		st.t.Fatalf("%T: %v", c, err)
	}
}

// put stores a file of a package version, uploaded days after t0.
func (st *store) put(repo, name, version, file string, days int) string {
	id := fmt.Sprintf("a%d", st.idx+1)
	st.apply(&meta.ArtifactPut{Artifact: meta.Artifact{ID: id, RepositoryID: repo, Path: name + "/" + version + "/" + file,
		PackageName: name, Version: version, Digest: "sha256:" + id, SizeBytes: 10, UploadedAt: t0.AddDate(0, 0, days)}})
	return id
}

// info records what a package says of itself, read from artifact id.
func (st *store) info(repo, name, id, summary string, keywords ...string) {
	st.t.Helper()
	var cur uint64
	_ = st.s.View(func(tx *meta.Tx) error { cur = tx.Indexer().Cursor; return nil })
	st.apply(&meta.PackageInfoPut{From: cur, To: st.idx, Infos: []meta.PackageInfo{{RepositoryID: repo, Name: name, ArtifactID: id,
		Summary: summary, Keywords: keywords, Licenses: []string{"MIT"}}}})
}

func (st *store) quick(readable []string, q string, limit int) []search.Result {
	var out []search.Result
	_ = st.s.View(func(tx *meta.Tx) error { out = search.Quick(tx, readable, q, limit); return nil })
	return out
}

func brief(rs []search.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %s@%s %s %.2f", r.Type, r.Repository, r.Name, r.Version, r.Match, r.Score))
	}
	return out
}

// TestQuickTiers: results come best tier first, within a ranged tier the
// closest name first, and each thing once (its best match).
func TestQuickTiers(t *testing.T) {
	st := newStore(t)
	lodash := st.put("r1", "lodash", "4.17.21", "lodash-4.17.21.tgz", 1)
	st.put("r1", "lodash", "4.17.20", "lodash-4.17.20.tgz", 0)
	st.put("r1", "lodash.merge", "4.6.2", "lodash.merge-4.6.2.tgz", 2)
	st.put("r1", "lodash-es", "4.17.21", "lodash-es-4.17.21.tgz", 3)
	st.put("r1", "my-lodash-fork", "1.0.0", "my-lodash-fork-1.0.0.tgz", 4)
	util := st.put("r1", "util-belt", "2.0.0", "util-belt-2.0.0.tgz", 5)
	st.info("r1", "util-belt", util, "Helpers in the spirit of lodash", "utilities", "lodash")
	st.info("r1", "lodash", lodash, "Lodash modular utilities", "modules", "stdlib")
	all := []string{"r1", "r2"}

	got := brief(st.quick(all, "lodash", 10))
	want := []string{
		"package open lodash@4.17.21 name 1.00",
		"package open lodash-es@4.17.21 name_prefix 0.80",
		"package open lodash.merge@4.6.2 name_prefix 0.75",
		"package open util-belt@2.0.0 term 0.55",
		"artifact open lodash-4.17.20.tgz@4.17.20 file_name_prefix 0.47",
		"artifact open lodash-4.17.21.tgz@4.17.21 file_name_prefix 0.47",
		"artifact open lodash-es-4.17.21.tgz@4.17.21 file_name_prefix 0.46",
		"artifact open lodash.merge-4.6.2.tgz@4.6.2 file_name_prefix 0.46",
		"package open my-lodash-fork@1.0.0 name_contains 0.36",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lodash:\n got %q\nwant %q", got, want)
	}
	if got := brief(st.quick(all, "lodash", 2)); len(got) != 2 || got[0] != want[0] {
		t.Errorf("limit 2: %q", got)
	}
	// A version, by its name and version in each spelling; a file by its
	// whole name; a package by a word of its summary, by a keyword's
	// start, by its licence.
	for q, first := range map[string]string{
		"lodash@4.17.20":        "version open lodash@4.17.20 version 1.00",
		"LODASH 4.17.20":        "version open lodash@4.17.20 version 1.00",
		"lodash:4.17.21":        "version open lodash@4.17.21 version 1.00",
		"lodash-es-4.17.21.tgz": "artifact open lodash-es-4.17.21.tgz@4.17.21 file_name 0.95",
		"helpers":               "package open util-belt@2.0.0 term 0.55",
		"stdl":                  "package open lodash@4.17.21 term_prefix 0.27",
		"mit":                   "package open lodash@4.17.21 term 0.55",
	} {
		if got := brief(st.quick(all, q, 10)); len(got) == 0 || got[0] != first {
			t.Errorf("%q: %q, want first %q", q, got, first)
		}
	}
	if got := st.quick(all, "nothing-like-it", 10); got == nil || len(got) != 0 {
		t.Errorf("no match: %#v", got)
	}
	if got := st.quick(all, "  ", 10); got == nil || len(got) != 0 {
		t.Errorf("blank: %#v", got)
	}
}

// TestNeverUnreadable: a search never answers what the caller may not
// read, whatever matched it, and still finds its limit among the rest.
func TestNeverUnreadable(t *testing.T) {
	st := newStore(t)
	for i := range 30 {
		id := st.put("r2", fmt.Sprintf("secret-%02d", i), "1.0", fmt.Sprintf("secret-%02d-1.0.tar.gz", i), i)
		st.info("r2", fmt.Sprintf("secret-%02d", i), id, "classified material")
	}
	st.put("r1", "secret-public", "1.0", "secret-public-1.0.tgz", 0)
	for _, q := range []string{"secret", "secret-01", "classified", "secret-01@1.0", "secret-01-1.0.tar.gz", "cret"} {
		for _, r := range st.quick([]string{"r1"}, q, 10) {
			if r.RepositoryID != "r1" {
				t.Errorf("%q answered %+v", q, r)
			}
		}
	}
	if got := brief(st.quick([]string{"r1"}, "secret", 1)); len(got) != 1 || got[0] != "package open secret-public@1.0 name_prefix 0.74" {
		t.Errorf("the readable one: %q", got)
	}
	if got := st.quick(nil, "secret", 10); len(got) != 0 {
		t.Errorf("no readable repository: %q", brief(got))
	}
	var sugg []search.Suggestion
	_ = st.s.View(func(tx *meta.Tx) error { sugg = search.Suggest(tx, []string{"r1"}, "cla", 10); return nil })
	if len(sugg) != 0 {
		t.Errorf("suggestions from an unreadable repository: %+v", sugg)
	}
}

// TestSuggest: names (shortest first), then terms, each text once.
func TestSuggest(t *testing.T) {
	st := newStore(t)
	st.put("r1", "react-dom", "18.0.0", "react-dom-18.0.0.tgz", 0)
	id := st.put("r1", "react", "18.0.0", "react-18.0.0.tgz", 0)
	st.put("r2", "react", "1.0", "react-1.0.tar.gz", 0)
	st.info("r1", "react", id, "Reactive user interfaces", "reactivity", "ui")
	var got []search.Suggestion
	_ = st.s.View(func(tx *meta.Tx) error { got = search.Suggest(tx, []string{"r1", "r2"}, "Reac", 10); return nil })
	want := []search.Suggestion{{"react", "package"}, {"react-dom", "package"}, {"reactive", "term"}, {"reactivity", "term"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestAdvanced: versions by text, format, repository and upload dates,
// paged, best first (left-pad covers more of its name than right-pad)
// then newest.
func TestAdvanced(t *testing.T) {
	st := newStore(t)
	st.put("r1", "left-pad", "1.0.0", "left-pad-1.0.0.tgz", 1)
	st.put("r1", "left-pad", "1.1.0", "left-pad-1.1.0.tgz", 5)
	st.put("r1", "right-pad", "2.0.0", "right-pad-2.0.0.tgz", 3)
	st.put("r2", "padding", "0.1", "padding-0.1.tar.gz", 4)
	all := []string{"r1", "r2"}
	run := func(q search.Query) []string {
		if q.Limit == 0 {
			q.Limit = 10
		}
		var p search.Page
		_ = st.s.View(func(tx *meta.Tx) error { p = search.Advanced(tx, all, q); return nil })
		out := []string{fmt.Sprint(p.Total)}
		for _, r := range p.Results {
			out = append(out, r.Name+"@"+r.Version)
		}
		return out
	}
	for name, c := range map[string]struct {
		q    search.Query
		want []string
	}{
		"text":             {search.Query{Text: "pad"}, []string{"4", "padding@0.1", "left-pad@1.1.0", "left-pad@1.0.0", "right-pad@2.0.0"}},
		"format":           {search.Query{Text: "pad", Format: "npm"}, []string{"3", "left-pad@1.1.0", "left-pad@1.0.0", "right-pad@2.0.0"}},
		"repository":       {search.Query{RepoID: "r2"}, []string{"1", "padding@0.1"}},
		"dates":            {search.Query{After: t0.AddDate(0, 0, 2), Before: t0.AddDate(0, 0, 5)}, []string{"2", "padding@0.1", "right-pad@2.0.0"}},
		"page 2":           {search.Query{Text: "pad", Offset: 2, Limit: 2}, []string{"4", "left-pad@1.0.0", "right-pad@2.0.0"}},
		"exact name first": {search.Query{Text: "left-pad"}, []string{"2", "left-pad@1.1.0", "left-pad@1.0.0"}},
	} {
		if got := run(c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}
