package meta

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestArtifactProperties(t *testing.T) {
	l := &testLog{t: t, s: open(t)}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.must(&RepoCreate{Repo: Repository{ID: "r1", Name: "files", Format: "generic", CreatedAt: t0, UpdatedAt: t0}})
	l.must(&RepoCreate{Repo: Repository{ID: "r2", Name: "other", Format: "generic", CreatedAt: t0, UpdatedAt: t0}})
	l.must(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "x/1/x.bin", Digest: "sha256:aa", UploadedAt: t0}})
	props := func() map[string][]string {
		var a *Artifact
		if err := l.s.View(func(tx *Tx) (err error) { a, err = tx.Artifact("a1"); return err }); err != nil {
			t.Fatal(err)
		}
		return a.Properties
	}
	l.must(&ArtifactProperties{ID: "a1", RepoID: "r1", Set: map[string][]string{"build.number": {"42"}, "qa": {"a", "b"}}})
	l.must(&ArtifactProperties{ID: "a1", RepoID: "r1", Set: map[string][]string{"build.name": {"app"}}, Remove: []string{"qa"}})
	if got := props(); !SameProperties(got, map[string][]string{"build.number": {"42"}, "build.name": {"app"}}) {
		t.Fatalf("merged: %v", got)
	}
	l.must(&ArtifactProperties{ID: "a1", RepoID: "r1", Replace: true, Set: map[string][]string{"only": {"1"}}})
	if got := props(); !SameProperties(got, map[string][]string{"only": {"1"}}) {
		t.Fatalf("replaced: %v", got)
	}
	// Refused, changing nothing: another repository's id, keys and values
	// out of bounds, and a change that adds up past the bound.
	big := strings.Repeat("v", MaxPropertyValue)
	many := map[string][]string{}
	for i := range MaxProperties {
		many["k"+strings.Repeat("x", i%200)+string(rune('a'+i%26))+string(rune('a'+i/26))] = []string{"v"}
	}
	for _, c := range []*ArtifactProperties{
		{ID: "a1", RepoID: "r2", Set: map[string][]string{"a": {"b"}}},
		{ID: "a1", RepoID: "r1", Set: map[string][]string{"a b": {"c"}}},
		{ID: "a1", RepoID: "r1", Set: map[string][]string{"": {"c"}}},
		{ID: "a1", RepoID: "r1", Set: map[string][]string{"a": {big + "v"}}},
		{ID: "a1", RepoID: "r1", Set: map[string][]string{"a": {"line\nbreak"}}},
		{ID: "a1", RepoID: "r1", Set: map[string][]string{"a": make([]string, MaxPropertyValues+1)}},
		{ID: "a1", RepoID: "r1", Set: many},
	} {
		err := l.apply(c)
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%v: want refused, got %v", c.Set, err)
		}
	}
	half := map[string][]string{}
	for i := range 14 {
		half["k"+string(rune('a'+i))] = []string{big}
	}
	l.must(&ArtifactProperties{ID: "a1", RepoID: "r1", Set: half})
	more := map[string][]string{}
	for i := range 14 {
		more["m"+string(rune('a'+i))] = []string{big}
	}
	if err := l.apply(&ArtifactProperties{ID: "a1", RepoID: "r1", Set: more}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("two changes past the bound: %v", err)
	}
	if got := props(); len(got) != 15 {
		t.Fatalf("after a refused change: %d keys", len(got))
	}
	// An artifact uploaded again at the path starts without them.
	l.must(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "x/1/x.bin", Digest: "sha256:bb", UploadedAt: t0}, Replace: true})
	if err := l.apply(&ArtifactProperties{ID: "a1", RepoID: "r1", Set: map[string][]string{"a": {"b"}}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the replaced artifact: %v", err)
	}
}
