package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"

	bolt "go.etcd.io/bbolt"
)

// scanSearch is the trigram search's reference: every package, filtered.
func scanSearch(t *testing.T, s *Store, repos []string, q string) []string {
	t.Helper()
	var out []string
	err := s.View(func(tx *Tx) error {
		pkgs, total, err := tx.searchPackages(repos, lower(q), func(int) bool { return true })
		for _, p := range pkgs {
			out = append(out, p.RepositoryID+"/"+p.Name)
		}
		if total != len(pkgs) {
			t.Errorf("scan total %d for %d packages", total, len(pkgs))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gramSearch(t *testing.T, s *Store, repos []string, q string, offset, limit int) ([]string, int) {
	t.Helper()
	var out []string
	var total int
	err := s.View(func(tx *Tx) error {
		pkgs, n, err := tx.Packages(PackageFilter{RepoIDs: repos, Query: q, Offset: offset, Limit: limit})
		for _, p := range pkgs {
			out = append(out, p.RepositoryID+"/"+p.Name)
		}
		total = n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, total
}

// TestSearchGrams: a search through the trigram index finds exactly what
// reading every name finds, in the same order, paged the same, after
// packages come and go, and on a store rebuilt from a snapshot.
func TestSearchGrams(t *testing.T) {
	s := open(t)
	seed(t, s) // r1
	if err := s.Apply(0, &RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	words := []string{"Parser", "json", "http", "par", "arse", "client", "PARSE", "xml"}
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for i := range 300 {
		name := fmt.Sprintf("%s-%s-%d", words[rng.IntN(len(words))], words[rng.IntN(len(words))], i%40)
		repo := []string{"r1", "r2"}[rng.IntN(2)]
		id := fmt.Sprintf("a%d", i)
		a := Artifact{ID: id, RepositoryID: repo, Path: fmt.Sprintf("%s/1.%d/f", name, i), PackageName: name, Version: fmt.Sprintf("1.%d", i), Digest: "sha256:x", SizeBytes: 1}
		if err := s.Apply(0, &ArtifactPut{Artifact: a}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	check := func(s *Store) {
		t.Helper()
		for _, q := range []string{"parse", "PARSER", "rse-js", "json-http", "client-1", "xml-par", "nothing-like-it", "ars"} {
			for _, repos := range [][]string{{"r1", "r2"}, {"r2"}, {}} {
				want := scanSearch(t, s, repos, q)
				got, total := gramSearch(t, s, repos, q, 0, 0)
				if !reflect.DeepEqual(got, want) || total != len(want) {
					t.Fatalf("search %q in %v = %v (%d), want %v", q, repos, got, total, want)
				}
				if len(want) > 3 {
					page, total := gramSearch(t, s, repos, q, 2, 2)
					if !reflect.DeepEqual(page, want[2:4]) || total != len(want) {
						t.Fatalf("page 2 of %q = %v (%d), want %v (%d)", q, page, total, want[2:4], len(want))
					}
				}
			}
		}
	}
	check(s)
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids[:200] {
		if err := s.Apply(0, &ArtifactDelete{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	check(s)
	check(snapshotInto(t, s))
	// Every package gone: no trigram is left counted.
	for _, id := range ids[200:] {
		if err := s.Apply(0, &ArtifactDelete{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.View(func(tx *Tx) error {
		if n := tx.bucket(bGramCounts).Stats().KeyN; n != 0 {
			t.Errorf("%d trigram counts left with no package", n)
		}
		if n := tx.bucket(bPkgGrams).Stats().KeyN; n != 0 {
			t.Errorf("%d trigram entries left with no package", n)
		}
		return nil
	})
}

// reopened applies cmds to a new store, closes it, changes its file with
// raw (what an older build would leave) and opens it again.
func reopened(t *testing.T, cmds []Command, raw func(tx *bolt.Tx) error) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(raw); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLateIndexes: a store written before an index existed gets it built
// from its records when opened.
func TestLateIndexes(t *testing.T) {
	s := reopened(t, []Command{
		&RepoCreate{Repo: Repository{ID: "r1", Name: "open", Format: "generic", Public: true, CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "closed", Format: "generic", CreatedAt: t0}},
		&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "json-parser/1/f", PackageName: "json-parser", Version: "1", Digest: "sha256:x"}},
	}, func(tx *bolt.Tx) error {
		for _, ix := range lateIndexes {
			for _, b := range ix.buckets {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if got, _ := gramSearch(t, s, []string{"r1", "r2"}, "PARSER", 0, 0); !reflect.DeepEqual(got, []string{"r1/json-parser"}) {
		t.Errorf("search after the rebuild = %v", got)
	}
	_ = s.View(func(tx *Tx) error {
		if got := tx.PublicRepoIDs(); !reflect.DeepEqual(got, []string{"r1"}) {
			t.Errorf("public repositories after the rebuild = %v", got)
		}
		if got, events := tx.Count(KindRepo), tx.Count(KindEvent); got != 2 || events != 3 {
			t.Errorf("counted %d repositories and %d events after the rebuild, want 2 and 3", got, events)
		}
		return nil
	})
}

// TestLateIndexesAfterAnotherBuild: a store an older build wrote to after
// this one (a downgrade, then an upgrade again), whose late indexes that
// build did not keep, has them built again when opened: whether or not
// its write moved the applied index, and, for a build that marks which it
// kept, only those it did not.
func TestLateIndexesAfterAnotherBuild(t *testing.T) {
	repos := []Command{
		&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}},
	}
	for name, moved := range map[string]bool{"applied at index 3": true, "a follower's own delete": false} {
		// The record gone, the count that build does not keep as it was.
		s := reopened(t, repos, func(tx *bolt.Tx) error {
			if err := tx.Bucket(spaces[Space(KindRepo)].bucket).Delete([]byte("r2")); err != nil {
				return err
			}
			if !moved {
				return nil
			}
			return tx.Bucket(bSys).Put(keyLastApplied, u64(3))
		})
		_ = s.View(func(tx *Tx) error {
			if n := tx.Count(KindRepo); n != 1 {
				t.Errorf("%s: %d repositories counted after another build's delete, want 1", name, n)
			}
			return nil
		})
	}

	// A build that kept the late indexes before the checksums': that one
	// (and those after it) is built again, the others are kept as they are.
	kept := slices.IndexFunc(lateIndexes, func(ix lateIndex) bool { return bytes.Equal(ix.buckets[0], bChecksums) })
	s := reopened(t, append(repos,
		&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:x",
			Checksums: blob.Checksums{SHA256: "AB12"}}}),
		func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bChecksums); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bChecksums); err != nil {
				return err
			}
			if err := tx.Bucket(bCounts).Put([]byte{byte(KindRepo)}, u64(7)); err != nil { // kept by it: left alone
				return err
			}
			return tx.Bucket(bSys).Put(keyIndexedTo, append(u64(uint64(tx.ID())), u64(uint64(kept))...))
		})
	_ = s.View(func(tx *Tx) error {
		if ids := tx.ArtifactsByChecksum("sha256", "ab12", 10); len(ids) != 1 || ids[0] != "a1" {
			t.Errorf("checksums after a build that did not keep them: %v", ids)
		}
		if n := tx.Count(KindRepo); n != 7 {
			t.Errorf("%d repositories counted, want the 7 the last build kept", n)
		}
		return nil
	})
}

// TestCounts: the kept counts follow creates, updates, deletes and a
// trim of the event log, and equal what a walk over the records finds.
func TestCounts(t *testing.T) {
	s := open(t)
	check := func(when string) {
		t.Helper()
		_ = s.View(func(tx *Tx) error {
			for k := range kinds {
				if got, walked := tx.Count(k), tx.space(Space(k)).Stats().KeyN; got != walked {
					t.Errorf("%s: %s counted %d, %d kept", when, k, got, walked)
				}
			}
			return nil
		})
	}
	for _, c := range []Command{
		&UserCreate{User: User{ID: "u1", Username: "ann", Role: RoleUser, CreatedAt: t0, UpdatedAt: t0}},
		&UserCreate{User: User{ID: "u2", Username: "bob", Role: RoleUser, CreatedAt: t0, UpdatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}},
		&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:x"}},
		&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "p/2/f", PackageName: "p", Version: "2", Digest: "sha256:y"}},
		&RepoUpdate{ID: "r2", Public: new(true), At: t0},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	check("after the creates")
	_ = s.View(func(tx *Tx) error {
		if st, _ := tx.Stats(); st.Users != 2 || st.Repositories != 2 {
			t.Errorf("stats %+v", st)
		}
		return nil
	})
	for _, c := range []Command{
		&UserDelete{ID: "u2"},
		&RepoDelete{ID: "r1"},
		&EventsCompact{At: t0, EventsBefore: EventAfterIndex(4)},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	check("after the deletes")
}

// TestReadableIndexes: public repositories follow updates and deletes;
// grants are found through the user and its groups, for the actions
// their permissions imply.
func TestReadableIndexes(t *testing.T) {
	s := open(t)
	for _, c := range []Command{
		&UserCreate{User: User{ID: "u1", Username: "ann", Role: RoleUser, CreatedAt: t0, UpdatedAt: t0}},
		&GroupCreate{Group: Group{ID: "g1", Name: "devs", CreatedAt: t0}},
		&GroupAddMembers{GroupID: "g1", UserIDs: []string{"u1"}},
		&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", Public: true, CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "two", Format: "generic", CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r3", Name: "three", Format: "generic", CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r4", Name: "four", Format: "generic", Public: true, CreatedAt: t0}},
		&PermissionCreate{Permission: Permission{ID: "p1", RepositoryID: "r2", UserID: "u1", Permissions: []string{ActionRead}, CreatedAt: t0}},
		&PermissionCreate{Permission: Permission{ID: "p2", RepositoryID: "r3", GroupID: "g1", Permissions: []string{ActionWrite}, CreatedAt: t0}},
		&RepoUpdate{ID: "r4", Public: new(false), At: t0},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	_ = s.View(func(tx *Tx) error {
		read, err := tx.GrantedRepoIDs("u1", ActionRead)
		write, err2 := tx.GrantedRepoIDs("u1", ActionWrite)
		for _, c := range []struct {
			what      string
			got, want []string
		}{
			{"all", tx.RepoIDs(), []string{"r1", "r2", "r3", "r4"}},
			{"public", tx.PublicRepoIDs(), []string{"r1"}},
			{"granted read", read, []string{"r2", "r3"}},
			{"granted write", write, []string{"r3"}},
		} {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
			}
		}
		if err != nil || err2 != nil {
			t.Error(err, err2)
		}
		return nil
	})
	if err := s.Apply(0, &RepoDelete{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		if got := tx.PublicRepoIDs(); len(got) != 0 {
			t.Errorf("public after delete = %v", got)
		}
		return nil
	})
}

// TestSessionPurge: a purge drops exactly the sessions that expired
// before its time (found through the expiry index, which follows a
// session's rewrite), on a store whose index was built late too.
func TestSessionPurge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds := []Command{&UserCreate{User: User{ID: "u1", Username: "ann", Role: RoleUser, CreatedAt: t0, UpdatedAt: t0}}}
	for i, d := range []time.Duration{-time.Hour, time.Minute, time.Hour, 2 * time.Minute, 48 * time.Hour} {
		cmds = append(cmds, &SessionCreate{Session: Session{ID: fmt.Sprintf("s%d", i), UserID: "u1", CreatedAt: t0, ExpiresAt: t0.Add(d)}})
	}
	cmds = append(cmds, &SessionRevoke{ID: "s2", At: t0})
	for _, c := range cmds {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	left := func(s *Store) []string {
		var ids []string
		_ = s.View(func(tx *Tx) error {
			ids = tx.prefixKeys(bUserSessions, "u1\x00")
			return nil
		})
		return ids
	}
	if err := s.Apply(0, &SessionPurge{Before: t0.Add(90 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := left(s); !reflect.DeepEqual(got, []string{"s2", "s3", "s4"}) {
		t.Fatalf("sessions after the purge: %v", got)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bSessExpiry) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Apply(0, &SessionPurge{Before: t0.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := left(s); !reflect.DeepEqual(got, []string{"s4"}) {
		t.Fatalf("sessions after a purge on the rebuilt index: %v", got)
	}
}

// TestReferencedSince: the blobs referenced after an index are listed in
// index order, a reference made again moves to its new index, a dropped
// one goes, and a page never cuts one index's references in two.
func TestReferencedSince(t *testing.T) {
	s := open(t)
	apply := func(idx uint64, c Command) {
		t.Helper()
		if err := s.Apply(idx, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	since := func(after uint64, limit int) ([]string, uint64) {
		var ds []string
		var next uint64
		_ = s.View(func(tx *Tx) error { ds, next = tx.ReferencedSince(after, limit); return nil })
		return ds, next
	}
	apply(1, &RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}})
	apply(2, &ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: "sha256:a1", Refs: []string{"sha256:c"}}})
	apply(3, &ArtifactsApply{RepoID: "r1", Put: []Artifact{
		{ID: "a2", RepositoryID: "r1", Path: "p/2/f", PackageName: "p", Version: "2", Digest: "sha256:a2", Refs: []string{"sha256:c"}},
		{ID: "a3", RepositoryID: "r1", Path: "p/3/f", PackageName: "p", Version: "3", Digest: "sha256:a3"},
	}})
	apply(4, &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/x", Value: json.RawMessage(`"a1"`), Blobs: []string{"sha256:k"}}}})
	if got, next := since(0, 100); !reflect.DeepEqual(got, []string{"sha256:a1", "sha256:c", "sha256:a2", "sha256:a3", "sha256:c", "sha256:k"}) || next != 4 {
		t.Fatalf("since 0: %v, next %d", got, next)
	}
	if got, next := since(2, 100); !reflect.DeepEqual(got, []string{"sha256:a2", "sha256:a3", "sha256:c", "sha256:k"}) || next != 4 {
		t.Fatalf("since 2: %v, next %d", got, next)
	}
	if got, next := since(0, 3); !reflect.DeepEqual(got, []string{"sha256:a1", "sha256:c", "sha256:a2", "sha256:a3", "sha256:c"}) || next != 3 {
		t.Fatalf("a page of 3 from 0 (index 3 whole): %v, next %d", got, next)
	}
	if got, next := since(4, 100); len(got) != 0 || next != 4 {
		t.Fatalf("since the last: %v, next %d", got, next)
	}
	apply(5, &ArtifactDelete{ID: "a3"})
	apply(6, &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/x", Value: json.RawMessage(`"a2"`), Blobs: []string{"sha256:k"}}}})
	if got, _ := since(2, 100); !reflect.DeepEqual(got, []string{"sha256:a2", "sha256:c", "sha256:k"}) {
		t.Fatalf("since 2 after a delete and a rewrite: %v", got)
	}
	_ = s.View(func(tx *Tx) error {
		if n, refs := tx.bucket(bRefOrder).Stats().KeyN, tx.bucket(bBlobRefs).Stats().KeyN; n != refs {
			t.Errorf("%d references listed in order, %d kept", n, refs)
		}
		return nil
	})
}
