package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/depot-registry/depot/shared/meta"
)

// TestRegistryTokens: a registry token lives only as long as the
// credential it came from, is refused to an account whose password must
// change, never renews itself and carries exactly its access grant.
func TestRegistryTokens(t *testing.T) {
	store, apply := testStore(t)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	exp := now.Add(time.Hour)
	cheap := PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}
	pwHash, _ := HashPasswordWith(cheap, "first-password")
	apply(&meta.UserCreate{User: meta.User{ID: "u1", Username: "alice", Role: meta.RoleUser, PasswordHash: pwHash}})
	apply(&meta.TokenCreate{Token: meta.Token{ID: "t1", UserID: "u1", Scopes: []string{"repository:read:libs"}, Hash: HashAPIToken("dpt_x"), ExpiresAt: &exp}})
	apply(&meta.SessionCreate{Session: meta.Session{ID: "s1", UserID: "u1", CreatedAt: now, ExpiresAt: exp}})
	a := &Authenticator{Meta: store, JWT: NewJWT([]byte("0123456789abcdef0123456789abcdef"), clock), Now: clock}
	ctx := context.Background()
	grant := RegistryGrant{Audience: "docker", Access: []Access{{Type: "repository", Name: "libs/app", Actions: []string{"pull"}}}}
	issue := func(p *Principal) string {
		t.Helper()
		tok, _, err := a.IssueRegistryToken(p, grant, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	apiTok, _ := a.APIToken("dpt_x")
	fromToken := issue(apiTok)
	p, err := a.Authenticate(ctx, "Bearer "+fromToken, "192.0.2.1")
	if err != nil || p.Username != "alice" || p.TokenID != "t1" || p.Via != CredRegistry || p.Audience != "docker" ||
		!Allows(p.Scopes, "read", "libs") || Allows(p.Scopes, "write", "libs") {
		t.Fatalf("registry token from an API token: %+v, %v", p, err)
	}
	if !p.Granted("repository", "libs/app", "pull") || p.Granted("repository", "libs/app", "push") || p.Granted("repository", "libs/other", "pull") {
		t.Fatalf("access claim not exact: %+v", p.Access)
	}
	if p.AcceptedOn("api") || !p.AcceptedOn("docker") || p.ManagesAccount() {
		t.Fatal("a registry token is for its format only")
	}

	pwP, err := a.Basic(ctx, "alice", "first-password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	fromPassword := issue(pwP)
	sessP, err := a.session(&Claims{Session: "s1", RegisteredClaims: regSubject("u1")}, CredSession, false)
	if err != nil {
		t.Fatal(err)
	}
	fromSession := issue(sessP)
	for name, tok := range map[string]string{"password": fromPassword, "session": fromSession} {
		if p, err := a.Bearer(ctx, tok); err != nil || p.UserID != "u1" || p.TokenID != "" {
			t.Fatalf("registry token from a %s: %+v, %v", name, p, err)
		}
	}

	// No renewal, whatever the scheme the registry token came in with.
	for _, scheme := range []string{"Bearer ", "Token ", "bearer "} {
		p, err := a.Authenticate(ctx, scheme+fromPassword, "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.IssueRegistryToken(p, grant, time.Minute); err == nil {
			t.Fatalf("a registry token (%q) bought its successor", scheme)
		}
	}

	anon, _, _ := a.IssueRegistryToken(nil, grant, 5*time.Minute)
	if p, err := a.Bearer(ctx, anon); err != nil || !p.Anonymous() {
		t.Fatalf("anonymous registry token: %+v, %v", p, err)
	}

	// The session's logout ends the tokens derived from it.
	apply(&meta.SessionRevoke{ID: "s1", At: now})
	if _, err := a.Bearer(ctx, fromSession); err == nil {
		t.Fatal("registry token outlived its session")
	}
	// A password change ends those derived from the password.
	newHash, _ := HashPasswordWith(cheap, "second-password")
	apply(&meta.UserUpdate{ID: "u1", PasswordHash: &newHash, At: now})
	if _, err := a.Bearer(ctx, fromPassword); err == nil {
		t.Fatal("registry token outlived the password it came from")
	}
	// The API token's revocation ends those derived from it.
	apply(&meta.TokenRevoke{ID: "t1", UserID: "u1"})
	if _, err := a.Bearer(ctx, fromToken); err == nil {
		t.Fatal("registry token outlived its API token")
	}

	// An account that must change its password gets no registry token.
	yes := true
	apply(&meta.UserUpdate{ID: "u1", MustChangePassword: &yes, At: now})
	pwP, err = a.Basic(ctx, "alice", "second-password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.IssueRegistryToken(pwP, grant, time.Minute); !errors.Is(err, ErrPasswordChange) {
		t.Fatalf("registry token for a pending password change: %v", err)
	}

	// They expire, and a refresh token is not a bearer credential.
	now = now.Add(6 * time.Minute)
	if _, err := a.Bearer(ctx, anon); err == nil {
		t.Fatal("expired registry token accepted")
	}
	ref, _, _ := a.JWT.Issue(RefreshToken, "u1", "s", time.Hour)
	if _, err := a.Bearer(ctx, ref); err == nil {
		t.Fatal("refresh token accepted as bearer")
	}
}

func regSubject(id string) jwt.RegisteredClaims { return jwt.RegisteredClaims{Subject: id} }
