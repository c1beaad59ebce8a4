package auth

import (
	"encoding/base64"
	"strings"
	"testing"
)

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func TestNewAPIToken(t *testing.T) {
	secret, hash, err := NewAPIToken()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) != len(TokenPrefix)+43 {
		t.Fatalf("secret %q: want %q + 43 chars", secret, TokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(secret[len(TokenPrefix):])
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret body is not base64url of 32 bytes: %v (%d bytes)", err, len(raw))
	}
	if hash != HashAPIToken(secret) {
		t.Error("returned hash differs from HashAPIToken(secret)")
	}
	if strings.Contains(hash, secret[len(TokenPrefix):]) {
		t.Error("hash contains the secret")
	}
	if LooksLikeJWT(secret) {
		t.Error("API token looks like a JWT")
	}
	s2, h2, _ := NewAPIToken()
	if s2 == secret || h2 == hash {
		t.Error("two API tokens are identical")
	}
}

func TestHashAPIToken(t *testing.T) {
	// Known SHA-256 vector (FIPS 180-2, "abc").
	if got, want := HashAPIToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashAPIToken(abc) = %s, want %s", got, want)
	}
	h := HashAPIToken("dpt_x")
	if len(h) != 64 || !isLowerHex(h) {
		t.Errorf("hash %q is not 64 lowercase hex chars", h)
	}
	if HashAPIToken("dpt_x") == HashAPIToken("dpt_y") {
		t.Error("different secrets hash equally")
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if len(id) != 32 || !isLowerHex(id) {
			t.Fatalf("id %q is not 32 lowercase hex chars", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestRandomPassword(t *testing.T) {
	seen := map[string]bool{}
	used := map[rune]bool{}
	for range 500 {
		pw := RandomPassword()
		if len(pw) != 20 {
			t.Fatalf("len(%q) = %d, want 20", pw, len(pw))
		}
		if strings.ContainsAny(pw, "0Oo1lI") {
			t.Fatalf("%q contains an ambiguous character", pw)
		}
		for _, c := range pw {
			if !strings.ContainsRune(unambiguousAlphabet, c) {
				t.Fatalf("%q contains %q outside the alphabet", pw, c)
			}
			used[c] = true
		}
		if err := ValidatePasswordPolicy(pw); err != nil {
			t.Fatalf("generated password fails policy: %v", err)
		}
		if seen[pw] {
			t.Fatalf("duplicate password %q", pw)
		}
		seen[pw] = true
	}
	// 10,000 draws from 56 symbols: every symbol should appear.
	if len(used) != len(unambiguousAlphabet) {
		t.Errorf("only %d of %d alphabet symbols used", len(used), len(unambiguousAlphabet))
	}
}

func TestRandomSecret(t *testing.T) {
	a, b := RandomSecret(), RandomSecret()
	if len(a) != 32 || len(b) != 32 {
		t.Fatalf("lengths %d, %d, want 32", len(a), len(b))
	}
	if string(a) == string(b) {
		t.Error("two secrets are identical")
	}
}
