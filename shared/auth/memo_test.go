package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// TestRememberedCredentials: who a token or a login session is stays
// remembered only while it holds: the clock passing its expiry, its
// revocation and a change of its user are seen at the next use.
func TestRememberedCredentials(t *testing.T) {
	store, apply := testStore(t)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	exp := now.Add(time.Minute)
	apply(&meta.UserCreate{User: meta.User{ID: "u1", Username: "alice", Role: meta.RoleUser}})
	apply(&meta.TokenCreate{Token: meta.Token{ID: "t1", UserID: "u1", Scopes: []string{"repository:read"}, Hash: HashAPIToken("dpt_x"), ExpiresAt: &exp}})
	apply(&meta.TokenCreate{Token: meta.Token{ID: "t2", UserID: "u1", Scopes: []string{"repository:read"}, Hash: HashAPIToken("dpt_y")}})
	apply(&meta.SessionCreate{Session: meta.Session{ID: "s1", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}})
	a := &Authenticator{Meta: store, Now: clock}
	session := func() (*Principal, error) {
		return a.session(&Claims{Session: "s1", RegisteredClaims: regSubject("u1")}, CredSession, false)
	}
	for range 2 { // decided, then remembered
		if p, err := a.APIToken("dpt_x"); err != nil || p.Username != "alice" || p.Role != meta.RoleUser {
			t.Fatalf("token: %+v %v", p, err)
		}
		if p, err := session(); err != nil || p.SessionID != "s1" {
			t.Fatalf("session: %+v %v", p, err)
		}
	}
	if a.memos().tokens.Len() != 1 || a.memos().sessions.Len() != 1 {
		t.Fatal("nothing remembered")
	}
	// A principal handed out is the caller's own.
	p, _ := a.APIToken("dpt_x")
	p.Role = meta.RoleAdmin
	if q, _ := a.APIToken("dpt_x"); q.Role != meta.RoleUser {
		t.Fatal("a caller changed the remembered principal")
	}

	apply(&meta.UserUpdate{ID: "u1", Role: ptrTo(meta.RoleViewer), At: now})
	if p, err := a.APIToken("dpt_x"); err != nil || p.Role != meta.RoleViewer {
		t.Fatalf("token after the user's role changed: %+v %v", p, err)
	}
	if p, err := session(); err != nil || p.Role != meta.RoleViewer {
		t.Fatalf("session after the user's role changed: %+v %v", p, err)
	}
	apply(&meta.SessionRevoke{ID: "s1", At: now})
	if _, err := session(); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("a revoked session: %v", err)
	}
	apply(&meta.TokenRevoke{ID: "t2", UserID: "u1"})
	if _, err := a.APIToken("dpt_y"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("a revoked token: %v", err)
	}
	now = exp // by the clock alone, no write
	if _, err := a.APIToken("dpt_x"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("an expired token: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }
