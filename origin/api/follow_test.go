package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// TestEdgeFollower: a follower store kept by the feed client from a real
// origin holds the node's repositories and the records it needs to
// authorise, follows writes and deletions, catches up on a repository
// assigned later, hears of a revoked token within 2 s while following,
// and a resync drops what the origin no longer has.
func TestEdgeFollower(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	mine := e.CreateRepo("mine", "generic", false)
	other := e.CreateRepo("other", "generic", false)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {mine}}).Want(200)
	first := put(e, "Bearer "+e.Admin, "mine/tool/1.0/tool.bin", "one")
	put(e, "Bearer "+e.Admin, "other/tool/1.0/tool.bin", "two")
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	e.Do("POST", "/api/v1/users/me/tokens", e.Admin, map[string]any{"name": "ci", "scopes": []string{"repository:read"}}).Want(201).JSON(&tok)

	s, err := meta.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The first origin is down: the client goes on to the next.
	c := &feed.Follower{Client: &protocol.Client{Origins: []string{"http://127.0.0.1:1", e.URL}, NodeID: n.ID, Token: n.Token}, Store: s}
	has := func(repo, path string) bool {
		var a *meta.Artifact
		_ = s.View(func(tx *meta.Tx) error { a, _ = tx.ArtifactByPath(repo, path); return nil })
		return a != nil
	}
	hasToken := func() bool {
		var err error
		_ = s.View(func(tx *meta.Tx) error { _, err = tx.TokenByHash(auth.HashAPIToken(tok.Token)); return nil })
		return err == nil
	}
	if err := c.Sync(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if !has(mine, "tool/1.0/tool.bin") || has(other, "tool/1.0/tool.bin") || !hasToken() {
		t.Fatal("after the first sync the replica lacks the node's records, or holds another repository's")
	}

	// A blob fetched from an offset resumes there.
	if r, err := c.Client.Fetch(t.Context(), "sha256:"+first.Checksums.SHA256, 1); err != nil {
		t.Fatal(err)
	} else if b, _ := io.ReadAll(r); string(b) != "ne" {
		t.Fatalf("fetch from byte 1 = %q", b)
	}

	// Writes and deletions follow.
	put(e, "Bearer "+e.Admin, "mine/tool/2.0/tool.bin", "three")
	e.Do("DELETE", "/api/v1/artifacts/"+first.ID, e.Admin, nil).Want(204)
	if err := c.Sync(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if !has(mine, "tool/2.0/tool.bin") || has(mine, "tool/1.0/tool.bin") {
		t.Fatal("the replica missed a write or a deletion")
	}

	// A repository assigned later: caught up on its own, the applied
	// index left for the feed to move.
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {other}}).Want(200)
	before := s.LastApplied()
	if err := c.Reconcile(t.Context(), []string{mine, other}); err != nil {
		t.Fatal(err)
	}
	if !has(other, "tool/1.0/tool.bin") || s.LastApplied() != before {
		t.Fatalf("catch-up: has the file %v, applied index %d -> %d", has(other, "tool/1.0/tool.bin"), before, s.LastApplied())
	}
	if followed, err := s.Followed(); err != nil || len(followed) != 2 {
		t.Fatalf("followed = %v, %v; want both repositories", followed, err)
	}

	// Following: a revoked token is gone from the replica within 2 s.
	ctx, stop := context.WithCancel(t.Context())
	followed := make(chan error, 1)
	go func() {
		followed <- c.Follow(ctx, 30*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	time.Sleep(200 * time.Millisecond) // the follower is waiting in a long poll
	e.Do("DELETE", "/api/v1/users/me/tokens/"+tok.ID, e.Admin, nil).Want(204)
	revoked := time.Now()
	for hasToken() {
		if time.Since(revoked) > 2*time.Second {
			t.Fatal("the revoked token is still in the replica after 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("revocation reached the replica in %v", time.Since(revoked).Round(time.Millisecond))
	stop()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow ended with %v", err)
	}

	// Unassigned: the node drops the repository's records.
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+other, e.Admin, nil).Want(200)
	if err := c.Reconcile(t.Context(), []string{mine}); err != nil {
		t.Fatal(err)
	}
	if has(other, "tool/1.0/tool.bin") || !has(mine, "tool/2.0/tool.bin") {
		t.Fatal("after unassigning, the replica kept the other repository's records or lost its own")
	}
	if followed, _ := s.Followed(); len(followed) != 1 || followed[0] != mine {
		t.Fatalf("followed after unassigning = %v", followed)
	}
	// A page read before the unassignment, arriving after it, brings
	// nothing of the repository back.
	late, _ := json.Marshal(meta.Artifact{ID: "late", RepositoryID: other, Path: "tool/3.0/tool.bin", PackageName: "tool", Version: "3.0", Digest: "sha256:00"})
	if err := s.ApplyFeed([]meta.Change{{Index: s.LastApplied(), Kind: meta.KindArtifact, Key: "late", Repo: other, Value: late}}, 0); err != nil {
		t.Fatal(err)
	}
	if has(other, "tool/3.0/tool.bin") {
		t.Fatal("a late page brought back a record of the repository taken away")
	}
	// Given back, it is caught up whole again: the records it dropped
	// come back at the index they have.
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {other}}).Want(200)
	if err := c.Reconcile(t.Context(), []string{mine, other}); err != nil {
		t.Fatal(err)
	}
	if !has(other, "tool/1.0/tool.bin") {
		t.Fatal("a repository given back lacks the records it had")
	}
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+other, e.Admin, nil).Want(200)
	if err := c.Reconcile(t.Context(), []string{mine}); err != nil {
		t.Fatal(err)
	}

	// A resync from 0 removes what the origin no longer has.
	stray, _ := json.Marshal(meta.Artifact{ID: "stray", RepositoryID: mine, Path: "ghost/1/g", PackageName: "ghost", Version: "1", Digest: "sha256:00"})
	if err := s.ApplyChanges([]meta.Change{{Index: 2, Kind: meta.KindArtifact, Key: "stray", Repo: mine, Value: stray}}, 0); err != nil {
		t.Fatal(err)
	}
	if !has(mine, "ghost/1/g") {
		t.Fatal("the stray record was not written")
	}
	if err := c.Resync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if has(mine, "ghost/1/g") || !has(mine, "tool/2.0/tool.bin") {
		t.Fatal("after a resync the replica kept a record the origin does not have, or lost one it has")
	}
}

// TestEdgeAudience: a follower holds the users who can act on its
// repositories and no others (an edge credential yields no one else's
// records): the admin and users granted something, directly or through
// a group, with their tokens; a user a grant brings in later arrives
// with the token made before it; one whose grant ends is forgotten;
// a public repository brings every user, and taking it away forgets
// them again.
func TestEdgeAudience(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://127.0.0.1:8081"}).Want(201).JSON(&n)
	mine := e.CreateRepo("mine", "generic", false)
	pub := e.CreateRepo("pub", "generic", true)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {mine}}).Want(200)

	ids, tokens := map[string]string{}, map[string]string{}
	for _, name := range []string{"bob", "carol", "dave"} {
		ids[name] = e.CreateUser(name, "user", "pass-"+name+"-123456")
		tokens[name] = e.Token(e.Login(name, "pass-"+name+"-123456"), []string{"repository:read"}, nil)
	}
	var devs struct {
		ID string `json:"id"`
	}
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "devs"}).Want(201).JSON(&devs)
	e.Do("POST", "/api/v1/groups/"+devs.ID+"/members", e.Admin, map[string][]string{"user_ids": {ids["carol"]}}).Want(200)
	var others struct {
		ID string `json:"id"`
	}
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "others"}).Want(201).JSON(&others)
	e.Grant(mine, devs.ID, true, "read")
	e.Grant(mine, ids["dave"], false, "read")

	s, err := meta.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &feed.Follower{Client: &protocol.Client{Origins: []string{e.URL}, NodeID: n.ID, Token: n.Token}, Store: s}
	holds := func() (users []string, groups []string) {
		t.Helper()
		_ = s.View(func(tx *meta.Tx) error {
			us, _ := tx.Users()
			for _, u := range us {
				// A user is held with a token, or not at all.
				_, terr := tx.TokenByHash(auth.HashAPIToken(tokens[u.Username]))
				if tokens[u.Username] != "" && terr != nil {
					t.Errorf("the replica holds %s without their token", u.Username)
				}
				users = append(users, u.Username)
			}
			gs, _ := tx.Groups()
			for _, g := range gs {
				groups = append(groups, g.Name)
			}
			return nil
		})
		for name, tok := range tokens {
			_ = s.View(func(tx *meta.Tx) error {
				if _, err := tx.TokenByHash(auth.HashAPIToken(tok)); err == nil && !slices.Contains(users, name) {
					t.Errorf("the replica holds %s's token without the user", name)
				}
				return nil
			})
		}
		return users, groups
	}
	want := func(step string, users, groups []string) {
		t.Helper()
		gotU, gotG := holds()
		if !slices.Equal(gotU, users) || !slices.Equal(gotG, groups) {
			t.Fatalf("%s: the replica holds users %q and groups %q; want %q and %q", step, gotU, gotG, users, groups)
		}
	}
	sync := func() {
		t.Helper()
		if err := c.Sync(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	want("from 0", []string{"admin", "carol", "dave"}, []string{"devs"})

	// A grant brings bob in, with the token he made before it.
	grant := e.Grant(mine, ids["bob"], false, "read")
	sync()
	want("bob granted", []string{"admin", "bob", "carol", "dave"}, []string{"devs"})
	e.Do("DELETE", "/api/v1/permissions/"+grant, e.Admin, nil).Want(204)
	sync()
	want("bob's grant gone", []string{"admin", "carol", "dave"}, []string{"devs"})

	// A group granted later brings itself and its members.
	e.Do("POST", "/api/v1/groups/"+others.ID+"/members", e.Admin, map[string][]string{"user_ids": {ids["bob"]}}).Want(200)
	sync()
	want("bob in an ungranted group", []string{"admin", "carol", "dave"}, []string{"devs"})
	e.Grant(mine, others.ID, true, "read")
	sync()
	want("bob's group granted", []string{"admin", "bob", "carol", "dave"}, []string{"devs", "others"})

	// A public repository: every user; taken away, the others go.
	e.Do("DELETE", "/api/v1/users/"+ids["bob"], e.Admin, nil).Want(204)
	delete(tokens, "bob")
	erin := e.CreateUser("erin", "user", "pass-erin-123456")
	tokens["erin"] = e.Token(e.Login("erin", "pass-erin-123456"), []string{"repository:read"}, nil)
	sync()
	want("bob deleted, erin new", []string{"admin", "carol", "dave"}, []string{"devs", "others"})
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {pub}}).Want(200)
	if err := c.Reconcile(t.Context(), []string{mine, pub}); err != nil {
		t.Fatal(err)
	}
	want("a public repository assigned", []string{"admin", "carol", "dave", "erin"}, []string{"devs", "others"})
	e.Do("PUT", "/api/v1/repositories/"+pub, e.Admin, map[string]any{"public": false}).Want(200)
	sync()
	want("the repository made private", []string{"admin", "carol", "dave"}, []string{"devs", "others"})
	e.Do("PUT", "/api/v1/repositories/"+pub, e.Admin, map[string]any{"public": true}).Want(200)
	sync()
	want("public again", []string{"admin", "carol", "dave", "erin"}, []string{"devs", "others"})
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+pub, e.Admin, nil).Want(200)
	if err := c.Reconcile(t.Context(), []string{mine}); err != nil {
		t.Fatal(err)
	}
	want("the public repository unassigned", []string{"admin", "carol", "dave"}, []string{"devs", "others"})
	_ = erin

	// What a follower of an older version holds (every user) is settled
	// when a client first syncs it.
	all := []meta.Change{}
	_ = s.View(func(tx *meta.Tx) error { return nil })
	for name, id := range map[string]string{"erin": erin} {
		u, _ := json.Marshal(meta.User{ID: id, Username: name, Role: meta.RoleUser})
		all = append(all, meta.Change{Index: 1, Kind: meta.KindUser, Key: id, Value: u})
	}
	if err := s.ApplyChanges(all, 0); err != nil {
		t.Fatal(err)
	}
	c2 := &feed.Follower{Client: &protocol.Client{Origins: []string{e.URL}, NodeID: n.ID, Token: n.Token}, Store: s}
	if err := c2.Sync(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	want("an older replica settled", []string{"admin", "carol", "dave"}, []string{"devs", "others"})
}
