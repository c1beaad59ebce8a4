package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// localCommit applies through the store, as a one-node log would.
type localCommit struct {
	s      *Store
	before func() // runs before each apply: lets a test slip a write in
}

func (c *localCommit) Apply(_ context.Context, cmd Command) (uint64, error) {
	if c.before != nil {
		c.before()
	}
	data, err := Encode(cmd)
	if err != nil {
		return 0, err
	}
	res := c.s.ApplyBatch([]Entry{{Data: data}})
	return c.s.LastApplied(), res[0].Err
}

// commitFunc adapts a function to Committer.
type commitFunc func(ctx context.Context, c Command) (uint64, error)

func (f commitFunc) Apply(ctx context.Context, c Command) (uint64, error) { return f(ctx, c) }

func seed(t *testing.T, s *Store) {
	t.Helper()
	for _, c := range []Command{
		&UserCreate{User: User{ID: "u1", Username: "alice", Role: RoleAdmin, CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r1", Name: "files", Format: "generic", CreatedAt: t0}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
}

func art(id, path, pkg, version string, size int64) Artifact {
	return Artifact{ID: id, RepositoryID: "r1", Path: path, PackageName: pkg, Version: version,
		SizeBytes: size, Digest: "sha256:" + id, UploadedAt: t0}
}

// TestStaleCommandRefused: a checked command whose read changed before it
// applied is refused with a typed conflict and changes nothing; each kind
// of precondition (a record, an absent key, a range) is checked.
func TestStaleCommandRefused(t *testing.T) {
	s := open(t)
	seed(t, s)
	if err := s.Apply(0, &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/a", Value: json.RawMessage(`1`)}}}); err != nil {
		t.Fatal(err)
	}
	// A decision reads tag/a, the absent tag/b, and the range tag/.
	pres, err := s.ViewTracked(func(tx *Tx) error {
		tx.KV("r1", "tag/a")
		tx.KV("r1", "tag/b")
		tx.KVList("r1", "tag/")
		return nil
	})
	if err != nil || len(pres) != 3 {
		t.Fatalf("preconditions = %+v, %v", pres, err)
	}
	cmd := &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/c", Value: json.RawMessage(`3`)}}}
	for _, w := range []struct {
		name  string
		write Command
	}{
		{"the record changed", &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/a", Value: json.RawMessage(`2`)}}}},
		{"the absent key appeared", &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/b", Value: json.RawMessage(`2`)}}}},
		{"the range grew", &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/z", Value: json.RawMessage(`2`)}}}},
		{"the record went", &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/a"}}}},
	} {
		t.Run(w.name, func(t *testing.T) {
			s := open(t)
			seed(t, s)
			if err := s.Apply(0, &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/a", Value: json.RawMessage(`1`)}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(0, w.write); err != nil {
				t.Fatal(err)
			}
			before := dump(t, s)
			err := s.Apply(0, &Checked{Pre: pres, Cmd: cmd})
			var se *StaleError
			if !errors.Is(err, ErrStale) || !errors.As(err, &se) {
				t.Fatalf("err = %v, want a StaleError", err)
			}
			if dump(t, s) != before {
				t.Fatal("a stale command changed the store")
			}
		})
	}
	// Unchanged, the same command applies.
	if err := s.Apply(0, &Checked{Pre: pres, Cmd: cmd}); err != nil {
		t.Fatalf("fresh command refused: %v", err)
	}
}

// TestDecideRetriesStale: when another write gets in between the read and
// the commit, Decide reads again and decides from the new state, so
// neither update is lost; past the bound it gives up with ErrStale.
func TestDecideRetriesStale(t *testing.T) {
	s := open(t)
	seed(t, s)
	counter := func(tx *Tx) int {
		var n int
		if raw, ok := tx.KV("r1", "n"); ok {
			_ = json.Unmarshal(raw, &n)
		}
		return n
	}
	incr := func(tx *Tx) (Command, error) {
		return &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "n", Value: json.RawMessage(fmt.Sprint(counter(tx) + 1))}}}, nil
	}
	slipped := 0
	c := &localCommit{s: s}
	c.before = func() {
		if slipped < 2 { // another node's increment lands first, twice
			slipped++
			if _, err := Decide(t.Context(), s, &localCommit{s: s}, incr); err != nil {
				t.Fatal(err)
			}
		}
	}
	attempts := 0
	_, err := Decide(t.Context(), s, c, func(tx *Tx) (Command, error) { attempts++; return incr(tx) })
	if err != nil {
		t.Fatal(err)
	}
	var n int
	_ = s.View(func(tx *Tx) error { n = counter(tx); return nil })
	if n != 3 || attempts != 3 {
		t.Fatalf("counter = %d after %d attempts; want 3 after 3 (no increment lost)", n, attempts)
	}
	// Always overtaken: bounded.
	c.before = func() {
		if _, err := Decide(t.Context(), s, &localCommit{s: s}, incr); err != nil {
			t.Fatal(err)
		}
	}
	attempts = 0
	_, err = Decide(t.Context(), s, c, func(tx *Tx) (Command, error) { attempts++; return incr(tx) })
	if !errors.Is(err, ErrStale) || attempts != DecideAttempts {
		t.Fatalf("err = %v after %d attempts; want ErrStale after %d", err, attempts, DecideAttempts)
	}
}

// TestDecideConcurrent: many deciders on one store, no lock between them,
// each adding itself to a list: every acknowledged write is there.
func TestDecideConcurrent(t *testing.T) {
	s := open(t)
	seed(t, s)
	var mu sync.Mutex // a log applies one entry at a time
	commit := commitFunc(func(_ context.Context, cmd Command) (uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		res := s.ApplyBatch([]Entry{{Data: must(Encode(cmd))}})
		return s.LastApplied(), res[0].Err
	})
	var wg sync.WaitGroup
	acked := make(chan int, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Decide(context.Background(), s, commit, func(tx *Tx) (Command, error) {
				var list []int
				if raw, ok := tx.KV("r1", "list"); ok {
					_ = json.Unmarshal(raw, &list)
				}
				raw, _ := json.Marshal(append(list, i))
				return &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "list", Value: raw}}}, nil
			})
			if err == nil {
				acked <- i
			} else if !errors.Is(err, ErrStale) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(acked)
	var list []int
	_ = s.View(func(tx *Tx) error {
		raw, _ := tx.KV("r1", "list")
		return json.Unmarshal(raw, &list)
	})
	have := map[int]bool{}
	for _, v := range list {
		have[v] = true
	}
	n := 0
	for i := range acked {
		n++
		if !have[i] {
			t.Errorf("acknowledged write %d lost; list %v", i, list)
		}
	}
	if len(list) != n {
		t.Errorf("list holds %d entries, %d were acknowledged", len(list), n)
	}
}

// TestBatchFailureIsAtomic: a command that fails halfway through its own
// writes changes nothing, and the rest of the batch applies.
func TestBatchFailureIsAtomic(t *testing.T) {
	s := open(t)
	seed(t, s)
	before := dump(t, s)
	res := s.ApplyBatch([]Entry{
		// The grant lacks an id: the repository must not be created either.
		{Data: must(Encode(&RepoCreate{Repo: Repository{ID: "r2", Name: "half", Format: "generic"}, CreatorGrant: &Permission{UserID: "u1"}}))},
		{Data: must(Encode(&RepoCreate{Repo: Repository{ID: "r3", Name: "whole", Format: "generic"}}))},
		{Data: must(Encode(&ArtifactDelete{IDs: []string{"ghost"}}))},
	})
	if res[0].Err == nil || res[1].Err != nil || !errors.Is(res[2].Err, ErrNotFound) {
		t.Fatalf("results = %+v", res)
	}
	err := s.View(func(tx *Tx) error {
		if _, err := tx.RepoByName("half"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the failed RepoCreate left its repository: %v", err)
		}
		if _, err := tx.RepoByName("whole"); err != nil {
			t.Errorf("the good command of the batch did not apply: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.LastApplied() == 0 || dump(t, s) == before {
		t.Fatal("the batch changed nothing")
	}
}

// TestChangeFeed: the feed lists what changed after an index, deletions as
// tombstones, filtered by repository; from 0 it lists every live record;
// behind the horizon it asks for a resync.
func TestChangeFeed(t *testing.T) {
	s, err := OpenWith(t.TempDir()+"/meta.db", Options{TombstoneRetention: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed(t, s) // indexes 1, 2
	apply := func(c Command) uint64 {
		t.Helper()
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
		return s.LastApplied()
	}
	apply(&RepoCreate{Repo: Repository{ID: "r2", Name: "other", Format: "npm", CreatedAt: t0}})
	i4 := apply(&ArtifactPut{Artifact: art("a1", "p/1/f", "p", "1", 1)})
	apply(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r2", Path: "x", PackageName: "x", Version: "1", Digest: "sha256:a2", UploadedAt: t0}})
	apply(&ArtifactDelete{ID: "a1"})
	var changes []Change
	next := uint64(0)
	view := func(since uint64, f ChangeFilter) {
		t.Helper()
		if err := s.View(func(tx *Tx) error {
			var err error
			changes, next, err = tx.Changes(since, f, 0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	view(i4-1, ChangeFilter{Repos: func(id string) bool { return id == "r1" }, NoGlobal: true})
	if len(changes) != 1 || changes[0].Key != "a1" || !changes[0].Deleted || changes[0].Index != 6 || next != 6 {
		t.Fatalf("r1 changes since %d = %+v (next %d)", i4-1, changes, next)
	}
	view(0, ChangeFilter{})
	var kinds []string
	for _, c := range changes {
		if c.Deleted {
			t.Errorf("a full listing holds a tombstone: %+v", c)
		}
		kinds = append(kinds, c.Kind.String()+":"+c.Key)
	}
	want := []string{"users:u1", "repositories:r1", "repositories:r2", "artifacts:a2"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("full listing = %v, want %v", kinds, want)
	}
	// Paging never splits one index.
	if err := s.View(func(tx *Tx) error {
		var err error
		changes, next, err = tx.Changes(0, ChangeFilter{}, 1)
		return err
	}); err != nil || len(changes) != 1 || next != 1 {
		t.Fatalf("first page = %+v next %d, %v", changes, next, err)
	}
	// Deletions older than the retention are forgotten: a reader that far
	// behind must resync.
	for i := 0; i < 12; i++ {
		apply(&SessionCreate{Session: Session{ID: fmt.Sprint("s", i), UserID: "u1", CreatedAt: t0, ExpiresAt: t0}})
	}
	err = s.View(func(tx *Tx) error { _, _, err := tx.Changes(5, ChangeFilter{}, 0); return err })
	if !errors.Is(err, ErrCompacted) {
		t.Fatalf("changes behind the horizon: %v, want ErrCompacted", err)
	}
}

// TestWaitIndex: WaitIndex returns once the index is applied, and honours
// its context.
func TestWaitIndex(t *testing.T) {
	s := open(t)
	done := make(chan error, 1)
	go func() { done <- s.WaitIndex(context.Background(), 2) }()
	if err := s.Apply(0, &UserCreate{User: User{ID: "u1", Username: "a"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("returned before index 2")
	case <-time.After(20 * time.Millisecond):
	}
	if err := s.Apply(0, &UserCreate{User: User{ID: "u2", Username: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.WaitIndex(ctx, 99); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// TestFilteredSnapshot: one repository's records travel on their own, and
// a store restored from them holds that repository (with its derived
// indexes) and the global records, nothing of the others.
func TestFilteredSnapshot(t *testing.T) {
	s := open(t)
	seed(t, s)
	for _, c := range []Command{
		&RepoCreate{Repo: Repository{ID: "r2", Name: "other", Format: "generic", CreatedAt: t0}},
		&ArtifactPut{Artifact: art("a1", "p/1/f", "p", "1", 5)},
		&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r2", Path: "x", PackageName: "x", Version: "1", Digest: "sha256:a2", UploadedAt: t0}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.Write(&buf, ChangeFilter{Repos: func(id string) bool { return id == "r1" }}); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	edge := open(t)
	if err := edge.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	err = edge.View(func(tx *Tx) error {
		if a, err := tx.ArtifactByPath("r1", "p/1/f"); err != nil || a.ID != "a1" {
			t.Errorf("r1 artifact on the edge: %+v %v", a, err)
		}
		if r, err := tx.RepoByName("files"); err != nil || r.ArtifactCount != 1 || r.SizeBytes != 5 {
			t.Errorf("r1 on the edge: %+v %v", r, err)
		}
		if _, err := tx.UserByName("alice"); err != nil {
			t.Errorf("global user missing: %v", err)
		}
		if _, err := tx.Repo("r2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("r2 reached the edge: %v", err)
		}
		if tx.Referenced("sha256:a2") || !tx.Referenced("sha256:a1") {
			t.Error("blob references do not follow the filter")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPackagesPaging: listings come from the package index, in (name,
// repository) order, with the right totals, and follow deletes.
func TestPackagesPaging(t *testing.T) {
	s := open(t)
	seed(t, s)
	if err := s.Apply(0, &RepoCreate{Repo: Repository{ID: "r0", Name: "zero", Format: "npm", CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("pkg%02d", i)
		names = append(names, name)
		for v := 1; v <= 2; v++ {
			a := art(fmt.Sprintf("a%d-%d", i, v), fmt.Sprintf("%s/%d/f", name, v), name, fmt.Sprint(v), int64(v))
			a.UploadedAt = t0.Add(time.Duration(v) * time.Second)
			if err := s.Apply(0, &ArtifactPut{Artifact: a}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Apply(0, &ArtifactPut{Artifact: Artifact{ID: "n1", RepositoryID: "r0", Path: "pkg05/-/x", PackageName: "pkg05", Version: "9", Digest: "sha256:n", UploadedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	err := s.View(func(tx *Tx) error {
		page, total, err := tx.Packages(PackageFilter{Offset: 5, Limit: 3})
		if err != nil {
			return err
		}
		got := []string{}
		for _, p := range page {
			got = append(got, p.Name+"@"+p.RepositoryID)
		}
		if total != 31 || !reflect.DeepEqual(got, []string{"pkg05@r0", "pkg05@r1", "pkg06@r1"}) {
			t.Errorf("page = %v total %d", got, total)
		}
		p := page[1]
		if p.LatestVersion != "2" || p.VersionCount != 2 || p.TotalSizeBytes != 3 || p.Format != "generic" {
			t.Errorf("summary = %+v", p)
		}
		if _, total, _ := tx.Packages(PackageFilter{Format: "npm"}); total != 1 {
			t.Errorf("npm packages = %d", total)
		}
		if page, total, _ := tx.Packages(PackageFilter{Query: "G2", Limit: 2}); total != 10 || len(page) != 2 || page[0].Name != "pkg20" {
			t.Errorf("query page = %+v total %d", page, total)
		}
		if page, total, _ := tx.Packages(PackageFilter{Name: "pkg05"}); total != 2 || len(page) != 2 {
			t.Errorf("by name = %+v total %d", page, total)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deleting the latest version moves latest back; the last one removes
	// the package.
	if err := s.Apply(0, &ArtifactDelete{ID: "a3-2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(0, &ArtifactDelete{ID: "a3-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(0, &ArtifactDelete{ID: "a4-2"}); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		page, total, _ := tx.Packages(PackageFilter{RepoIDs: []string{"r1"}, Name: "pkg04"})
		if total != 1 || page[0].LatestVersion != "1" || page[0].VersionCount != 1 {
			t.Errorf("pkg04 after deleting its latest = %+v", page)
		}
		if _, total, _ := tx.Packages(PackageFilter{RepoIDs: []string{"r1"}}); total != 29 {
			t.Errorf("r1 packages = %d, want 29", total)
		}
		return nil
	})
}

// TestGrantsIndex: a user's grants on a repository, direct and through
// groups, come from the indexes and follow deletes.
func TestGrantsIndex(t *testing.T) {
	s := open(t)
	seed(t, s)
	for _, c := range []Command{
		&UserCreate{User: User{ID: "u2", Username: "bob", Role: RoleUser}},
		&GroupCreate{Group: Group{ID: "g1", Name: "devs", Members: []string{"u2"}}},
		&PermissionCreate{Permission: Permission{ID: "p1", RepositoryID: "r1", UserID: "u2", Permissions: []string{"read"}, CreatedAt: t0}},
		&PermissionCreate{Permission: Permission{ID: "p2", RepositoryID: "r1", GroupID: "g1", Permissions: []string{"write"}, CreatedAt: t0.Add(time.Second)}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	grants := func() []string {
		var out []string
		_ = s.View(func(tx *Tx) error {
			gs, err := tx.Grants("u2", "r1")
			for _, g := range gs {
				out = append(out, g.ID)
			}
			return err
		})
		return out
	}
	if g := grants(); !reflect.DeepEqual(g, []string{"p1", "p2"}) {
		t.Fatalf("grants = %v", g)
	}
	if err := s.Apply(0, &PermissionDelete{ID: "p1"}); err != nil {
		t.Fatal(err)
	}
	if g := grants(); !reflect.DeepEqual(g, []string{"p2"}) {
		t.Fatalf("grants after delete = %v", g)
	}
	if err := s.Apply(0, &UserDelete{ID: "u2"}); err != nil {
		t.Fatal(err)
	}
	if g := grants(); len(g) != 0 {
		t.Fatalf("grants of a deleted user = %v", g)
	}
}
