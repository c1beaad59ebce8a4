package meta

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestMemo: a remembered value holds until a write touches a kind it
// depends on (or, for a repository's kinds, that repository); writes to
// other kinds or repositories leave it, and a decision is not asked again
// while it holds. A follower forgetting records, and a restore, end every
// value.
func TestMemo(t *testing.T) {
	s := open(t)
	apply := func(c Command) {
		t.Helper()
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	apply(&UserCreate{User: User{ID: "u1", Username: "ann", Role: RoleUser, CreatedAt: t0, UpdatedAt: t0}})
	apply(&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}})
	apply(&RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}})
	apply(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:a"}})

	users := NewMemo[string, string](s, 10, []Kind{KindUser}, nil)
	paths := NewMemo[string, string](s, 10, nil, []Kind{KindArtifact})
	asked := 0
	user := func() string {
		t.Helper()
		v, err := users.Get("u1", "", func(tx *Tx) (string, bool, error) {
			asked++
			u, err := tx.User("u1")
			if err != nil {
				return "", false, err
			}
			return u.Email, true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	path := func() string {
		t.Helper()
		v, err := paths.Get("p/1/f", "r1", func(tx *Tx) (string, bool, error) {
			asked++
			a, err := tx.ArtifactByPath("r1", "p/1/f")
			if err != nil {
				return "", false, err
			}
			return a.Digest, true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	expect := func(what string, got, want string, wantAsked int) {
		t.Helper()
		if got != want || asked != wantAsked {
			t.Fatalf("%s: %q after %d decisions, want %q after %d", what, got, asked, want, wantAsked)
		}
	}
	expect("the user", user(), "", 1)
	expect("the user again", user(), "", 1)
	expect("the path", path(), "sha256:a", 2)
	apply(&RepoUpdate{ID: "r1", Description: ptr("other kind"), At: t0})
	apply(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r2", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:b"}})
	expect("the user after writes of other kinds", user(), "", 2)
	expect("the path after an artifact of another repository", path(), "sha256:a", 2)
	apply(&UserUpdate{ID: "u1", Email: ptr("ann@x"), At: t0})
	expect("the user after its change", user(), "ann@x", 3)
	apply(&ArtifactPut{Artifact: Artifact{ID: "a3", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:c"}, Replace: true})
	expect("the path after its artifact was replaced", path(), "sha256:c", 4)
	expect("the path again", path(), "sha256:c", 4)

	// A follower forgetting the user, without a new index.
	if err := s.Forget([]string{"u1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Get("u1", "", func(tx *Tx) (string, bool, error) { _, err := tx.User("u1"); return "", err == nil, err }); err == nil {
		t.Fatal("a forgotten user is still remembered")
	}
	// A restore ends every value.
	var snap bytes.Buffer
	sn, err := s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sn.WriteTo(&snap); err != nil {
		t.Fatal(err)
	}
	sn.Release()
	before := asked
	path()
	if err := s.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	path()
	if asked != before+1 {
		t.Fatalf("%d decisions around a restore, want 1 (after it)", asked-before)
	}
}

// TestMemoBound: a memo keeps at most its bound.
func TestMemoBound(t *testing.T) {
	s := open(t)
	m := NewMemo[int, int](s, 3, []Kind{KindUser}, nil)
	for i := range 10 {
		if _, err := m.Get(i, "", func(*Tx) (int, bool, error) { return i, true, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Len(); n != 3 {
		t.Fatalf("%d values kept, bound 3", n)
	}
}

// TestRememberedTotals: a repository's totals read in views are
// remembered, and every write that changes them (an artifact stored,
// replaced or deleted, in that repository only) is seen by the next view;
// a write transaction reads them from the store.
func TestRememberedTotals(t *testing.T) {
	s := open(t)
	apply := func(c Command) {
		t.Helper()
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	apply(&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}})
	apply(&RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}})
	totals := func(id string) (int64, int64) {
		t.Helper()
		var r *Repository
		if err := s.View(func(tx *Tx) error { var err error; r, err = tx.Repo(id); return err }); err != nil {
			t.Fatal(err)
		}
		return r.ArtifactCount, r.SizeBytes
	}
	want := func(what, id string, n, size int64) {
		t.Helper()
		for range 2 { // the second read is the remembered one
			if gn, gs := totals(id); gn != n || gs != size {
				t.Fatalf("%s: %s holds %d artifacts of %d bytes, want %d of %d", what, id, gn, gs, n, size)
			}
		}
	}
	want("empty", "r1", 0, 0)
	apply(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:a", SizeBytes: 10}})
	want("one stored", "r1", 1, 10)
	want("the other repository", "r2", 0, 0)
	apply(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "p/2/f", PackageName: "p", Version: "2", Digest: "sha256:b", SizeBytes: 5}})
	want("two stored", "r1", 2, 15)
	apply(&ArtifactPut{Artifact: Artifact{ID: "a3", RepositoryID: "r2", Path: "q/1/f", PackageName: "q", Version: "1", Digest: "sha256:c", SizeBytes: 7}})
	want("one in the other repository", "r2", 1, 7)
	want("untouched", "r1", 2, 15)
	apply(&ArtifactDelete{ID: "a1"})
	want("one deleted", "r1", 1, 5)
	if s.statsMemo().Len() != 2 {
		t.Errorf("the totals of %d repositories are remembered, want 2", s.statsMemo().Len())
	}
	// Remembered, not read again: totals changed under the store's back
	// (no write of it notes them) are not seen.
	if err := s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bRepoStats).Put([]byte("r1"), []byte(`{"artifacts":9}`)) }); err != nil {
		t.Fatal(err)
	}
	want("remembered", "r1", 1, 5)
}
