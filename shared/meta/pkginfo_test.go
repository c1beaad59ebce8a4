package meta

import (
	"errors"
	"testing"
	"time"
)

// TestPackageInfo: what a package says of itself is kept from its newest
// file that says something, found by its terms, and goes with the
// package's last version or its repository; the indexer's cursor moves
// only from where it is.
func TestPackageInfo(t *testing.T) {
	s := open(t)
	l := &testLog{t: t, s: s}
	apply, must := l.apply, l.must
	art := func(id, version string, at time.Time) Command {
		return &ArtifactPut{Artifact: Artifact{ID: id, RepositoryID: "r1", Path: "p/" + version + "/f", PackageName: "p", Version: version,
			Digest: "sha256:" + id, UploadedAt: at}}
	}
	cursor := func() uint64 {
		var c uint64
		_ = s.View(func(tx *Tx) error { c = tx.Indexer().Cursor; return nil })
		return c
	}
	put := func(id, summary string) {
		t.Helper()
		must(&PackageInfoPut{From: cursor(), To: l.idx + 1, Infos: []PackageInfo{{RepositoryID: "r1", Name: "p", ArtifactID: id, Summary: summary}}})
	}
	has := func(term string) (summary string, found bool) {
		_ = s.View(func(tx *Tx) error {
			if p := tx.PackageInfoOf("r1", "p"); p != nil {
				summary = p.Summary
			}
			tx.PackagesByTerm(term, true, func(_, repo, name string) bool { found = repo == "r1" && name == "p"; return false })
			return nil
		})
		return summary, found
	}
	must(&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}})
	must(art("a1", "1", t0))
	must(art("a2", "2", t0.Add(time.Hour)))
	put("a2", "the newer words")
	put("a1", "the older words") // from an older file: not taken
	if sum, found := has("newer"); sum != "the newer words" || !found {
		t.Errorf("after the older file: %q %v", sum, found)
	}
	if _, found := has("older"); found {
		t.Error("the older file's terms are indexed")
	}
	put("a2", "renamed wording") // the same file read again: taken
	if _, found := has("newer"); found {
		t.Error("a term the package no longer has is indexed")
	}
	if err := apply(&PackageInfoPut{From: 1, To: 99}); !errors.Is(err, ErrConflict) {
		t.Errorf("a put from elsewhere than the cursor: %v", err)
	}
	must(&ArtifactDelete{ID: "a2"})
	if sum, _ := has("renamed"); sum != "renamed wording" {
		t.Errorf("kept while a version is left: %q", sum)
	}
	put("a1", "the older words") // its file is gone: the older one's taken
	must(&ArtifactDelete{ID: "a1"})
	if sum, found := has("older"); sum != "" || found {
		t.Errorf("after the last version: %q %v", sum, found)
	}
	must(art("a3", "3", t0))
	put("a3", "back again")
	must(&RepoDelete{ID: "r1"})
	_ = s.View(func(tx *Tx) error {
		if n := tx.Count(KindPackageInfo); n != 0 {
			t.Errorf("%d package informations after the repository went", n)
		}
		return nil
	})
	must(&ReindexStart{At: t0, Total: 5})
	if err := apply(&ReindexStart{At: t0}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second reindex: %v", err)
	}
	must(&PackageInfoPut{From: 0, To: l.idx, Read: 5, Failed: 1, Finished: true, At: &t0})
	_ = s.View(func(tx *Tx) error {
		if r := tx.Indexer().Reindex; r == nil || r.Status != "completed" || r.Done != 5 || r.Failed != 1 {
			t.Errorf("reindex: %+v", r)
		}
		return nil
	})
}
