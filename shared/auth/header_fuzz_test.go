package auth

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// FuzzAuthorizationHeader: no header value may panic or authenticate
// without a real credential.
func FuzzAuthorizationHeader(f *testing.F) {
	store, err := meta.Open(filepath.Join(f.TempDir(), "meta.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	hash, _ := HashPasswordWith(PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}, "right-password")
	if err := store.Apply(1, &meta.UserCreate{User: meta.User{ID: "u1", Username: "alice", PasswordHash: hash, Role: meta.RoleUser}}); err != nil {
		f.Fatal(err)
	}
	a := &Authenticator{Meta: store, JWT: NewJWT([]byte("0123456789abcdef0123456789abcdef"), nil), Now: time.Now}
	for _, s := range []string{"", "Bearer x", "Basic YWxpY2U6d3Jvbmc=", "Basic !!!", "dpt_abc", "Token a.b.c", "Bearer a.b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		p, err := a.Authenticate(context.Background(), h, "192.0.2.1")
		if err == nil && p != nil {
			t.Fatalf("header %q authenticated as %+v", h, p)
		}
	})
}
