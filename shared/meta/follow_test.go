package meta

import (
	"encoding/json"

	"testing"
)

// edgeFilter passes what an edge node reads (see replication/feed).
var edgeFilter = ChangeFilter{Kinds: []Kind{KindUser, KindToken, KindGroup, KindPermission, KindRepo, KindArtifact, KindKV, KindPluginModule}}

// follow brings a follower up to date with pages of at most limit changes.
func follow(t *testing.T, from, to *Store, limit int) {
	t.Helper()
	for range 1000 {
		var page []Change
		var next uint64
		err := from.View(func(tx *Tx) error {
			var err error
			page, next, err = tx.Changes(to.LastApplied(), edgeFilter, limit)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := to.ApplyChanges(page, next); err != nil {
			t.Fatal(err)
		}
		if next >= from.LastApplied() {
			return
		}
	}
	t.Fatal("the follower never caught up")
}

// state is what a store answers to the queries the edge will serve.
func state(t *testing.T, s *Store) string {
	t.Helper()
	out := map[string]any{}
	err := s.View(func(tx *Tx) error {
		recs, _, err := tx.Changes(0, edgeFilter, 0)
		out["records"] = recs
		out["repos"], _ = tx.Repos()
		out["packages"], _, _ = tx.Packages(PackageFilter{})
		out["search"], _, _ = tx.Packages(PackageFilter{Query: "too"})
		out["grants"], _ = tx.Grants("u1", "r1")
		out["token"], _ = tx.TokenByHash("hash1")
		out["user"], _ = tx.UserByName("ALICE")
		out["groups"], _ = tx.Groups()
		out["stats"], _ = tx.Stats()
		out["kv"] = tx.KVList("r1", "")
		out["public"] = tx.PublicRepoIDs()
		out["refs"] = []bool{tx.Referenced("sha256:bb"), tx.Referenced("sha256:aa"), tx.Referenced("sha256:ee"), tx.Referenced("sha256:m1"), tx.Referenced("sha256:m3")}
		out["plugins"], _ = tx.InstalledPlugins()
		out["blob repos"] = tx.BlobRepos("sha256:bb")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFollower: a store fed the change feed of another, page by page as
// the other changes, answers every query the same as it; so does one
// that starts late from 0; applying a page again changes nothing.
func TestFollower(t *testing.T) {
	origin, live := open(t), open(t)
	var pages [][]Change
	for i, c := range script() {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := origin.ApplyBatch([]Entry{{Index: uint64(i + 1), Data: data}})[0].Err; err != nil {
			t.Fatalf("apply %T: %v", c, err)
		}
		since := live.LastApplied()
		follow(t, origin, live, 3)
		if got, want := state(t, live), state(t, origin); got != want {
			t.Fatalf("after %T the follower differs:\n%s\nwant\n%s", c, got, want)
		}
		var page []Change
		_ = origin.View(func(tx *Tx) error { page, _, _ = tx.Changes(since, edgeFilter, 0); return nil })
		pages = append(pages, page)
	}
	late := open(t)
	follow(t, origin, late, 2)
	if got, want := state(t, late), state(t, origin); got != want {
		t.Fatalf("a follower from 0 differs:\n%s\nwant\n%s", got, want)
	}
	// Old pages again (a retry, or a catch-up read racing the feed):
	// nothing deleted comes back, nothing newer is overwritten.
	before := state(t, live)
	for _, p := range pages {
		if err := live.ApplyChanges(p, 1); err != nil {
			t.Fatal(err)
		}
	}
	if after := state(t, live); after != before {
		t.Fatalf("replaying old pages changed the follower:\n%s\nwas\n%s", after, before)
	}
	if live.LastApplied() != origin.LastApplied() {
		t.Fatalf("applied index %d, want %d", live.LastApplied(), origin.LastApplied())
	}
}

// TestRewriteUsers: a follower's users are rewritten in place, found by
// their username as before, the applied index unmoved; a second pass has
// nothing to rewrite; the feed goes on after it.
func TestRewriteUsers(t *testing.T) {
	origin, edge := open(t), open(t)
	apply := func(c Command) {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := origin.ApplyBatch([]Entry{{Index: origin.LastApplied() + 1, Data: data}})[0].Err; err != nil {
			t.Fatal(err)
		}
	}
	apply(&UserCreate{User: User{ID: "u1", Username: "ann", Email: "ann@example.com", PasswordHash: "secret-hash", Role: RoleUser}})
	follow(t, origin, edge, 0)
	applied := edge.LastApplied()
	redact := func(u *User) bool {
		if u.PasswordHash == "marker" {
			return false
		}
		u.PasswordHash, u.Email = "marker", ""
		return true
	}
	if n, err := edge.RewriteUsers(redact); err != nil || n != 1 {
		t.Fatalf("rewrote %d users: %v", n, err)
	}
	if n, err := edge.RewriteUsers(redact); err != nil || n != 0 {
		t.Fatalf("again: rewrote %d users: %v", n, err)
	}
	var u *User
	if err := edge.View(func(tx *Tx) error { var err error; u, err = tx.UserByName("ann"); return err }); err != nil {
		t.Fatal(err)
	}
	if u.PasswordHash != "marker" || u.Email != "" || edge.LastApplied() != applied {
		t.Fatalf("after the rewrite: %+v, applied %d (was %d)", u, edge.LastApplied(), applied)
	}
	apply(&UserCreate{User: User{ID: "u2", Username: "bob", PasswordHash: "h2", Role: RoleUser}})
	follow(t, origin, edge, 0)
	if err := edge.View(func(tx *Tx) error { _, err := tx.UserByName("bob"); return err }); err != nil {
		t.Fatalf("a later user did not arrive: %v", err)
	}
}
