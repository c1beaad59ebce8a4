package auth

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

func TestRegistryTokens(t *testing.T) {
	store, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	exp := now.Add(time.Hour)
	for _, c := range []meta.Command{
		&meta.UserCreate{User: meta.User{ID: "u1", Username: "alice", Role: meta.RoleUser}},
		&meta.TokenCreate{Token: meta.Token{ID: "t1", UserID: "u1", Scopes: []string{"repository:read:libs"}, Hash: "h", ExpiresAt: &exp}},
	} {
		if err := store.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	a := &Authenticator{Meta: store, JWT: NewJWT([]byte("0123456789abcdef0123456789abcdef"), clock), Now: clock}

	tok, _, err := a.IssueRegistryToken(&Principal{UserID: "u1", TokenID: "t1"}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Header("Bearer " + tok)
	if err != nil || p.Username != "alice" || p.TokenID != "t1" || !Allows(p.Scopes, "read", "libs") || Allows(p.Scopes, "write", "libs") {
		t.Fatalf("registry token from an API token: %+v, %v", p, err)
	}
	plain, _, _ := a.IssueRegistryToken(&Principal{UserID: "u1"}, 5*time.Minute)
	if p, err := a.Bearer(plain); err != nil || p.TokenID != "" || p.UserID != "u1" {
		t.Fatalf("registry token from a password: %+v, %v", p, err)
	}
	anon, _, _ := a.IssueRegistryToken(nil, 5*time.Minute)
	if p, err := a.Bearer(anon); err != nil || !p.Anonymous() {
		t.Fatalf("anonymous registry token: %+v, %v", p, err)
	}
	// The API token's revocation ends registry tokens derived from it.
	if err := store.Apply(0, &meta.TokenRevoke{ID: "t1", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bearer(tok); err == nil {
		t.Fatal("registry token outlived its API token")
	}
	// And they expire.
	now = now.Add(6 * time.Minute)
	if _, err := a.Bearer(plain); err == nil {
		t.Fatal("expired registry token accepted")
	}
	// A refresh token is not a bearer credential.
	ref, _, _ := a.JWT.Issue(RefreshToken, "u1", "s", time.Hour)
	if _, err := a.Bearer(ref); err == nil {
		t.Fatal("refresh token accepted as bearer")
	}
}
