package meta

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestKeyOnlyQueries: package names, the repositories of a package and
// format keys are listed from the indexes, in order, stop when asked,
// follow deletes, and are the same on a store rebuilt from a snapshot.
func TestKeyOnlyQueries(t *testing.T) {
	s := open(t)
	seed(t, s) // repository r1 "files"
	for _, c := range []Command{
		&RepoCreate{Repo: Repository{ID: "r0", Name: "zeta", Format: "generic", CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "alpha", Format: "generic", CreatedAt: t0}},
		&ArtifactPut{Artifact: art("a1", "tool/1.0/t", "tool", "1.0", 1)},
		&ArtifactPut{Artifact: art("a2", "tool/2.0/t", "tool", "2.0", 1)},
		&ArtifactPut{Artifact: art("a3", "lib/1.0/l", "lib", "1.0", 1)},
		&ArtifactPut{Artifact: art("a4", "app/1.0/a", "app", "1.0", 1)},
		&ArtifactsApply{RepoID: "r0", Put: []Artifact{{ID: "a5", RepositoryID: "r0", Path: "tool/9/t", PackageName: "tool", Version: "9", Digest: "sha256:x"}}},
		&ArtifactsApply{RepoID: "r2", Put: []Artifact{{ID: "a6", RepositoryID: "r2", Path: "tool/8/t", PackageName: "tool", Version: "8", Digest: "sha256:x"}}},
		&KVApply{RepoID: "r1", Ops: []KVOp{{Key: "m/b@1", Value: json.RawMessage(`1`)}, {Key: "m/a@2", Value: json.RawMessage(`2`)},
			{Key: "m/a@1", Value: json.RawMessage(`3`)}, {Key: "n/a", Value: json.RawMessage(`4`)}}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *Store, names, first, keys, toolRepos, libRepos []string) {
		t.Helper()
		err := s.View(func(tx *Tx) error {
			var got, one, ks []string
			tx.PackageNames("r1", func(n string) bool { got = append(got, n); return true })
			tx.PackageNames("r1", func(n string) bool { one = append(one, n); return false })
			tx.KVKeys("r1", "m/", func(k string) bool { ks = append(ks, k); return true })
			for _, c := range []struct {
				what      string
				got, want []string
			}{
				{"package names", got, names}, {"names, stopped", one, first}, {"keys", ks, keys},
				{"repositories of tool", tx.PackageRepos("tool"), toolRepos}, {"repositories of lib", tx.PackageRepos("lib"), libRepos},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Repositories in name order: alpha (r2), files (r1), zeta (r0).
	check(s, []string{"app", "lib", "tool"}, []string{"app"}, []string{"m/a@1", "m/a@2", "m/b@1"},
		[]string{"r2", "r1", "r0"}, []string{"r1"})
	check(snapshotInto(t, s), []string{"app", "lib", "tool"}, []string{"app"}, []string{"m/a@1", "m/a@2", "m/b@1"},
		[]string{"r2", "r1", "r0"}, []string{"r1"})

	for _, c := range []Command{
		&ArtifactDelete{ID: "a3"},
		&ArtifactDelete{ID: "a5"},
		&KVApply{RepoID: "r1", Ops: []KVOp{{Key: "m/a@2"}}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	check(s, []string{"app", "tool"}, []string{"app"}, []string{"m/a@1", "m/b@1"}, []string{"r2", "r1"}, nil)

	// A decision that listed keys is stale once a key appears under them.
	pres, err := s.ViewTracked(func(tx *Tx) error {
		tx.KVKeys("r1", "m/", func(string) bool { return false })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(0, &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "m/c@1", Value: json.RawMessage(`5`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(0, &Checked{Pre: pres, Cmd: &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "x", Value: json.RawMessage(`1`)}}}}); !isStale(err) {
		t.Errorf("a decision over a changed key range: %v, want stale", err)
	}
}

func isStale(err error) bool {
	_, ok := err.(*StaleError)
	return ok
}

// TestKVValue: values are read back as written whatever they hold,
// with or without blobs, including values that mention the blobs field.
func TestKVValue(t *testing.T) {
	for _, rec := range []kvRecord{
		{Value: json.RawMessage(`"text"`)},
		{Value: json.RawMessage(`{"a":1}`)},
		{Value: json.RawMessage(`"fake ,\"b\": field"`)},
		{Value: json.RawMessage(`{"v":2}`), Blobs: []string{"sha256:x"}},
		{Value: json.RawMessage(`["<&>"]`)},
	} {
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var want kvRecord
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, ok := kvValue(raw)
		if !ok || string(got) != string(want.Value) {
			t.Errorf("kvValue(%s) = %s, %v; want %s", raw, got, ok, want.Value)
		}
	}
	if _, ok := kvValue([]byte(`{"v":`)); ok {
		t.Error("a truncated record reads as a value")
	}
}
