package auth

import (
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/meta"
)

// TestEdgeUserKeepsThePasswordVersion: a registry token an origin issued
// from a password names the hash's version, and an edge, which has only
// the marker EdgeUser leaves, finds the same version in it (a token from
// a password was refused at edges: skopeo's blob checks through one).
func TestEdgeUserKeepsThePasswordVersion(t *testing.T) {
	hash, err := HashPasswordWith(cheap, "a-password-123")
	if err != nil {
		t.Fatal(err)
	}
	u := meta.User{ID: "u1", Username: "ann", Email: "ann@example.com", PasswordHash: hash}
	if !EdgeUser(&u) {
		t.Fatal("EdgeUser says it changed nothing")
	}
	if u.Email != "" || u.PasswordHash == hash || passwordVersion(u.PasswordHash) != passwordVersion(hash) {
		t.Fatalf("edge record %+v: version %s, want %s", u, passwordVersion(u.PasswordHash), passwordVersion(hash))
	}
	again := u
	if EdgeUser(&again) || !reflect.DeepEqual(again, u) {
		t.Fatal("EdgeUser is not idempotent")
	}
}
