package feed_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/meta"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func store(t *testing.T, opts meta.Options) *meta.Store {
	t.Helper()
	s, err := meta.OpenWith(filepath.Join(t.TempDir(), "meta.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func apply(t *testing.T, s *meta.Store, cmds ...meta.Command) {
	t.Helper()
	for _, c := range cmds {
		if err := s.Apply(s.LastApplied()+1, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
}

func art(id, repo, path string) meta.Artifact {
	return meta.Artifact{ID: id, RepositoryID: repo, Path: path, PackageName: "p", Version: "1", Digest: "sha256:" + id, UploadedAt: t0}
}

// keys renders a page as kind/key (deleted ones with a minus).
func keys(p protocol.Page) []string {
	var out []string
	for _, c := range p.Changes {
		k := c.Kind.String() + "/" + c.Key
		if c.Deleted {
			k = "-" + k
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func fixture(t *testing.T) *meta.Store {
	s := store(t, meta.Options{})
	apply(t, s,
		&meta.UserCreate{User: meta.User{ID: "u1", Username: "ann", Role: meta.RoleUser, PasswordHash: "h", CreatedAt: t0}},
		&meta.TokenCreate{Token: meta.Token{ID: "t1", UserID: "u1", Name: "ci", Hash: "th", CreatedAt: t0}},
		&meta.SessionCreate{Session: meta.Session{ID: "s1", UserID: "u1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}},
		&meta.GroupCreate{Group: meta.Group{ID: "g1", Name: "devs", CreatedAt: t0}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "mine", Format: "generic", CreatedAt: t0}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r2", Name: "theirs", Format: "generic", CreatedAt: t0}},
		&meta.PermissionCreate{Permission: meta.Permission{ID: "p1", RepositoryID: "r1", UserID: "u1", Permissions: []string{"read"}, CreatedAt: t0}},
		&meta.PermissionCreate{Permission: meta.Permission{ID: "p2", RepositoryID: "r2", UserID: "u1", Permissions: []string{"read"}, CreatedAt: t0}},
		&meta.ArtifactPut{Artifact: art("a1", "r1", "p/1/a")},
		&meta.ArtifactPut{Artifact: art("a2", "r2", "p/1/b")},
		&meta.KVApply{RepoID: "r1", Ops: []meta.KVOp{{Key: "tag/x", Value: []byte(`"1"`)}}},
		&meta.EdgeCreate{Edge: meta.EdgeNode{ID: "e1", Name: "near", URL: "http://e", TokenHash: "eh1", CreatedAt: t0}},
		&meta.EdgeCreate{Edge: meta.EdgeNode{ID: "e2", Name: "far", URL: "http://f", TokenHash: "eh2", CreatedAt: t0}},
		&meta.EdgeAssign{ID: "e1", RepoIDs: []string{"r1"}, At: t0},
		&meta.WebhookCreate{Webhook: meta.Webhook{ID: "w1", URL: "https://ci", Events: []string{"*"}, Secret: "s", CreatedAt: t0}},
		&meta.PackageInfoPut{Infos: []meta.PackageInfo{{RepositoryID: "r1", Name: "p", ArtifactID: "a1", Summary: "searchable at the edge"},
			{RepositoryID: "r2", Name: "p", ArtifactID: "a2", Summary: "not the edge's"}}, To: 1},
	)
	return s
}

// TestWhatAnEdgeReads: from 0, the node's repositories and the records it
// needs to authorise, sessions (whether one has ended) included; never
// edge records, webhooks (their secrets) or other repositories.
func TestWhatAnEdgeReads(t *testing.T) {
	s := fixture(t)
	now := feed.Applicable() // the kinds this build's edges name
	p, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Kinds: now})
	if err != nil {
		t.Fatal(err)
	}
	// (g1 is granted nothing: not the node's; TestAudience.)
	want := []string{"artifacts/a1", "format keys/r1\x00tag/x", "package information/r1\x00p", "permissions/p1", "repositories/r1", "sessions/s1", "tokens/t1", "users/u1"}
	if got := keys(p); !slices.Equal(got, want) {
		t.Fatalf("from 0 = %q\nwant %q", got, want)
	}
	if p.Next != s.LastApplied() {
		t.Fatalf("next = %d, want the last applied index %d", p.Next, s.LastApplied())
	}
	// Users come without their emails and password hashes.
	for _, c := range p.Changes {
		if c.Kind == meta.KindUser && (strings.Contains(string(c.Value), `"h"`) || strings.Contains(string(c.Value), "ann@")) {
			t.Errorf("a user record for an edge holds its hash or email: %s", c.Value)
		}
	}
	// One repository on its own: no global records.
	p, err = feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Repo: "r1", Kinds: now})
	if want := []string{"artifacts/a1", "format keys/r1\x00tag/x", "package information/r1\x00p", "permissions/p1", "repositories/r1"}; err != nil || !slices.Equal(keys(p), want) {
		t.Fatalf("r1 alone = %q, %v; want %q", keys(p), err, want)
	}
	if _, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Repo: "r2"}); !errors.Is(err, feed.ErrNotAssigned) {
		t.Fatalf("a repository not assigned: err = %v", err)
	}
	// Paged: every change once, in order.
	var all []string
	since := uint64(0)
	for range 20 {
		p, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Since: since, Limit: 2, Kinds: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) == 0 {
			break
		}
		all, since = append(all, keys(p)...), p.Next
	}
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Fatalf("paged = %q, want %q", all, want)
	}
}

// TestLongPoll: a read with nothing new waits, ignores what the node may
// not see, and answers the first change it may see, deletions included.
func TestLongPoll(t *testing.T) {
	s := fixture(t)
	e := "e1"
	since := s.LastApplied()
	got := make(chan protocol.Page, 1)
	go func() {
		p, err := feed.Read(context.Background(), s, e, protocol.FeedQuery{Since: since, Wait: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	time.Sleep(50 * time.Millisecond)
	apply(t, s, &meta.ArtifactPut{Artifact: art("a3", "r2", "p/2/b")}) // not the node's
	select {
	case p := <-got:
		t.Fatalf("answered a change it may not see: %q", keys(p))
	case <-time.After(100 * time.Millisecond):
	}
	apply(t, s, &meta.ArtifactDelete{ID: "a1"})
	select {
	case p := <-got:
		if want := []string{"-artifacts/a1"}; !slices.Equal(keys(p), want) || p.Next != s.LastApplied() {
			t.Fatalf("long poll = %q next %d, want %q next %d", keys(p), p.Next, want, s.LastApplied())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not answer the node's change")
	}
	// Nothing more within the wait: an empty page at the last index.
	start := time.Now()
	p, err := feed.Read(t.Context(), s, e, protocol.FeedQuery{Since: s.LastApplied(), Wait: 100 * time.Millisecond})
	if err != nil || len(p.Changes) != 0 || p.Next != s.LastApplied() || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("an idle wait = %+v, %v after %v", p, err, time.Since(start))
	}
}

// TestCompacted: a reader further behind than the deletions the store
// remembers is told to read again from 0.
func TestCompacted(t *testing.T) {
	s := store(t, meta.Options{TombstoneRetention: 2})
	apply(t, s,
		&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "mine", Format: "generic", CreatedAt: t0}},
		&meta.EdgeCreate{Edge: meta.EdgeNode{ID: "e1", Name: "near", URL: "http://e", TokenHash: "eh1", CreatedAt: t0}},
		&meta.EdgeAssign{ID: "e1", RepoIDs: []string{"r1"}, At: t0},
		&meta.ArtifactPut{Artifact: art("a1", "r1", "p/1/a")},
		&meta.ArtifactDelete{ID: "a1"},
	)
	for i := range 5 {
		apply(t, s, &meta.ArtifactPut{Artifact: art("b"+string(rune('0'+i)), "r1", "q/"+string(rune('0'+i))+"/b")})
	}
	if _, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Since: 2}); !errors.Is(err, meta.ErrCompacted) {
		t.Fatalf("err = %v, want ErrCompacted", err)
	}
}

// TestAssignedDuringLongPoll: a repository assigned while the node's long
// poll waits is read from its assignment on; a change of it right after
// the assignment is never skipped (the filter was fixed when the poll
// started, and the page moved the node past the change).
func TestAssignedDuringLongPoll(t *testing.T) {
	for i := range 20 {
		s := fixture(t)
		since := s.LastApplied()
		got := make(chan protocol.Page, 1)
		go func() {
			p, err := feed.Read(context.Background(), s, "e1", protocol.FeedQuery{Since: since, Wait: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
		time.Sleep(time.Duration(i) * time.Millisecond)
		apply(t, s, &meta.EdgeAssign{ID: "e1", RepoIDs: []string{"r1", "r2"}, At: t0},
			&meta.ArtifactPut{Artifact: art("a9", "r2", "p/9/b")})
		var seen []string
		for p := range got {
			seen = append(seen, keys(p)...)
			if p.Next >= s.LastApplied() {
				break
			}
			p, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Since: p.Next, Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			got <- p
		}
		if !slices.Contains(seen, "artifacts/a9") {
			t.Fatalf("#%d: the feed moved past the new repository's artifact: %q", i, seen)
		}
	}
}

// TestSkippedEntriesReported: a long poll that passes only entries the
// node may not see answers its new index within a second or so, not at
// the end of its wait, so the node's reported lag is not 30 s of
// entries it never needed.
func TestSkippedEntriesReported(t *testing.T) {
	s := fixture(t)
	since := s.LastApplied()
	go func() {
		time.Sleep(50 * time.Millisecond)
		apply(t, s, &meta.ArtifactPut{Artifact: art("a3", "r2", "p/2/b")}) // not the node's
	}()
	start := time.Now()
	p, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Since: since, Wait: 20 * time.Second})
	if err != nil || len(p.Changes) != 0 || p.Next != since+1 {
		t.Fatalf("= %+v, %v; want an empty page at %d", p, err, since+1)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
}

// TestAudience: of the global records, a node reads those of the users
// who can act on its repositories (admins, users granted something there,
// directly or through a group, with their tokens and sessions) and of the
// groups granted there; a grant made later lets a read naming the user
// bring their records; every user when a repository is public.
func TestAudience(t *testing.T) {
	s := fixture(t)
	user := func(id, name string, role meta.Role) meta.Command {
		return &meta.UserCreate{User: meta.User{ID: id, Username: name, Role: role, PasswordHash: "h", CreatedAt: t0}}
	}
	apply(t, s,
		user("u2", "bob", meta.RoleUser),
		&meta.TokenCreate{Token: meta.Token{ID: "t2", UserID: "u2", Name: "ci", Hash: "th2", CreatedAt: t0}},
		&meta.SessionCreate{Session: meta.Session{ID: "s2", UserID: "u2", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}},
		user("u3", "root", meta.RoleAdmin),
		user("u4", "carol", meta.RoleUser),
		user("u5", "dan", meta.RoleUser),
		&meta.GroupCreate{Group: meta.Group{ID: "g2", Name: "builders", CreatedAt: t0}},
		&meta.GroupAddMembers{GroupID: "g2", UserIDs: []string{"u4"}},
		&meta.GroupAddMembers{GroupID: "g1", UserIDs: []string{"u5"}},
		&meta.PermissionCreate{Permission: meta.Permission{ID: "p3", RepositoryID: "r1", GroupID: "g2", Permissions: []string{"read"}, CreatedAt: t0}},
	)
	read := func(r protocol.FeedQuery) []string {
		t.Helper()
		p, err := feed.Read(t.Context(), s, "e1", r)
		if err != nil {
			t.Fatal(err)
		}
		var global []string
		for _, k := range keys(p) {
			if strings.HasPrefix(k, "users/") || strings.HasPrefix(k, "tokens/") || strings.HasPrefix(k, "sessions/") ||
				strings.HasPrefix(k, "groups/") || strings.HasPrefix(k, "-") {
				global = append(global, k)
			}
		}
		return global
	}
	want := []string{"groups/g2", "sessions/s1", "tokens/t1", "users/u1", "users/u3", "users/u4"}
	if got := read(protocol.FeedQuery{}); !slices.Equal(got, want) {
		t.Fatalf("from 0: %q\nwant %q", got, want)
	}
	// Asked for by name before a grant: nothing; after it, bob with his
	// token and session (made before the grant, so never in a page since).
	if got := read(protocol.FeedQuery{Principals: []string{"u2", "g1", "nobody"}}); len(got) != 0 {
		t.Fatalf("records of users and groups outside the audience: %q", got)
	}
	since := s.LastApplied()
	apply(t, s, &meta.PermissionCreate{Permission: meta.Permission{ID: "p4", RepositoryID: "r1", UserID: "u2", Permissions: []string{"read"}, CreatedAt: t0}})
	if got, want := read(protocol.FeedQuery{Principals: []string{"u2"}}), []string{"sessions/s2", "tokens/t2", "users/u2"}; !slices.Equal(got, want) {
		t.Fatalf("bob after his grant: %q, want %q", got, want)
	}
	// Changes of users outside the audience are not sent; deletions carry
	// nothing and are.
	since = s.LastApplied()
	apply(t, s,
		&meta.TokenCreate{Token: meta.Token{ID: "t5", UserID: "u5", Name: "ci", Hash: "th5", CreatedAt: t0}},
		&meta.TokenCreate{Token: meta.Token{ID: "t4", UserID: "u4", Name: "ci", Hash: "th4", CreatedAt: t0}},
		&meta.TokenRevoke{ID: "t5", UserID: "u5"},
	)
	if got, want := read(protocol.FeedQuery{Since: since}), []string{"-tokens/t5", "tokens/t4"}; !slices.Equal(got, want) {
		t.Fatalf("since %d: %q, want %q", since, got, want)
	}
	// A public repository: every user is the node's.
	apply(t, s, &meta.EdgeAssign{ID: "e1", RepoIDs: []string{"r1", "r2"}, At: t0})
	apply(t, s, &meta.RepoUpdate{ID: "r2", Public: ptr(true)})
	got := read(protocol.FeedQuery{Global: true})
	for _, k := range []string{"users/u2", "users/u5", "tokens/t2", "groups/g2"} {
		if !slices.Contains(got, k) {
			t.Fatalf("with a public repository the global read lacks %s: %q", k, got)
		}
	}
	if slices.Contains(got, "groups/g1") {
		t.Fatal("a group granted nothing was read")
	}
}

func ptr[T any](v T) *T { return &v }

// TestKindsTheReaderKnows: a reader that names the kinds its replica can
// apply is sent no record of another kind (an older edge under a newer
// origin); one that names none gets those of an edge from before.
func TestKindsTheReaderKnows(t *testing.T) {
	s := fixture(t)
	p, err := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Kinds: []meta.Kind{meta.KindRepo, meta.KindArtifact, 99}})
	if want := []string{"artifacts/a1", "repositories/r1"}; err != nil || !slices.Equal(keys(p), want) {
		t.Fatalf("kinds named: %q, %v; want %q", keys(p), err, want)
	}
	// An edge that names no kinds is of a build before they were named:
	// it gets the kinds of that time, not the package information.
	all, _ := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{})
	named, _ := feed.Read(t.Context(), s, "e1", protocol.FeedQuery{Kinds: feed.Applicable()})
	older := slices.DeleteFunc(keys(named), func(k string) bool { return strings.HasPrefix(k, "package information/") })
	if !slices.Equal(keys(all), older) || len(keys(all)) < 5 || len(older) == len(keys(named)) {
		t.Fatalf("none named: %q; this build's kinds: %q", keys(all), keys(named))
	}
}
