package auth

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// TestRemoteVouch: an edge (its own secret, no sessions) accepts an
// origin's session JWT and the registry tokens derived from it once the
// origin vouches for them; the origin refuses to vouch after logout; the
// edge still checks the user against its replica; and the edge's own
// registry tokens minted from a vouched session are accepted only by an
// edge, never by an origin.
func TestRemoteVouch(t *testing.T) {
	open := func() *meta.Store {
		s, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	originStore, edgeStore := open(), open()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	user := meta.User{ID: "u1", Username: "alice", Role: meta.RoleUser}
	for _, s := range []*meta.Store{originStore, edgeStore} {
		if err := s.Apply(0, &meta.UserCreate{User: user}); err != nil {
			t.Fatal(err)
		}
	}
	if err := originStore.Apply(0, &meta.SessionCreate{Session: meta.Session{ID: "s1", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	origin := &Authenticator{Meta: originStore, JWT: NewJWT([]byte("origin-secret-origin-secret-0123"), clock), Now: clock}
	asked := 0
	edge := &Authenticator{Meta: edgeStore, JWT: NewJWT([]byte("edge-secret-edge-secret-edge-012"), clock), Now: clock,
		Remote: func(_ context.Context, tok string) (*Claims, error) { asked++; return origin.Vouch(tok) }}
	ctx := context.Background()

	access, _, err := origin.JWT.Issue(AccessToken, "u1", "s1", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p, err := edge.Authenticate(ctx, "Bearer "+access, "192.0.2.1")
	if err != nil || p.Username != "alice" || p.Via != CredSession || asked != 1 {
		t.Fatalf("edge with an origin's session JWT: %+v, %v (asked %d)", p, err, asked)
	}
	// A registry token the edge issues from it is the edge's own: the edge
	// takes it without asking; an origin does not take it at all.
	grant := RegistryGrant{Audience: "docker", Access: []Access{{Type: "repository", Name: "libs/app", Actions: []string{"pull"}}}}
	edgeReg, _, err := edge.IssueRegistryToken(p, grant, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := edge.Bearer(ctx, edgeReg); err != nil || p.UserID != "u1" || p.Via != CredRegistry || asked != 1 {
		t.Fatalf("edge registry token from a vouched session: %+v, %v (asked %d)", p, err, asked)
	}
	if _, err := origin.Bearer(ctx, edgeReg); err == nil {
		t.Fatal("an origin accepted a token an edge signed")
	}
	// The vouched mark is honoured only by an edge: an origin issuing it
	// itself would still look the session up.
	if _, err := origin.registry(&Claims{RegisteredClaims: regSubject("u1"), Kind: RegistryToken, Session: "gone", Vouched: true,
		Access: grant.Access}, false); err == nil {
		t.Fatal("an origin honoured a vouched mark")
	}
	// An origin's registry token from the session, at the edge.
	sessP, err := origin.Bearer(ctx, access)
	if err != nil {
		t.Fatal(err)
	}
	originReg, _, _ := origin.IssueRegistryToken(sessP, grant, 5*time.Minute)
	if p, err := edge.Bearer(ctx, originReg); err != nil || p.Via != CredRegistry || !p.Granted("repository", "libs/app", "pull") {
		t.Fatalf("edge with an origin's registry token: %+v, %v", p, err)
	}

	// Logout: the origin vouches no more.
	if err := originStore.Apply(0, &meta.SessionRevoke{ID: "s1", At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := origin.Vouch(access); err == nil {
		t.Fatal("vouched for a revoked session")
	}
	if _, err := edge.Bearer(ctx, access); err == nil {
		t.Fatal("edge accepted a session JWT after logout (no cache here)")
	}
	// A deleted user is refused at the edge whatever the origin said.
	if err := originStore.Apply(0, &meta.SessionCreate{Session: meta.Session{ID: "s2", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	access2, _, _ := origin.JWT.Issue(AccessToken, "u1", "s2", 15*time.Minute)
	if err := edgeStore.Apply(0, &meta.UserDelete{ID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := edge.Bearer(ctx, access2); err == nil {
		t.Fatal("edge accepted the session JWT of a user its replica deleted")
	}
	// Garbage is not sent anywhere, and refresh tokens are not vouched for.
	before := asked
	if _, err := edge.Bearer(ctx, "not-a-jwt"); err == nil || asked != before {
		t.Fatal("garbage bearer accepted or sent to the origin")
	}
	ref, _, _ := origin.JWT.Issue(RefreshToken, "u1", "s2", time.Hour)
	if _, err := origin.Vouch(ref); err == nil {
		t.Fatal("vouched for a refresh token")
	}
}

// TestPlausible: only unexpired access and registry tokens of depot's
// issuer are worth asking an origin about, whoever signed them.
func TestPlausible(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	j := NewJWT([]byte("some-secret-some-secret-some-sec"), func() time.Time { return now })
	access, _, _ := j.Issue(AccessToken, "u1", "s1", time.Minute)
	registry, _, _ := j.Issue(RegistryToken, "u1", "", time.Minute)
	refresh, _, _ := j.Issue(RefreshToken, "u1", "s1", time.Minute)
	if !Plausible(access, now) || !Plausible(registry, now) {
		t.Fatal("a fresh access or registry token is not plausible")
	}
	for name, tok := range map[string]string{"expired": access, "refresh": refresh, "junk": "a.b.c", "empty": ""} {
		at := now
		if name == "expired" {
			at = now.Add(2 * time.Minute)
		}
		if Plausible(tok, at) {
			t.Errorf("%s token plausible", name)
		}
	}
}
