package signing

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignAndVerify(t *testing.T) {
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	file := []byte("the bytes of an artifact")
	digest := sha256.Sum256(file)
	other := sha256.Sum256([]byte("other bytes"))
	for _, alg := range []string{Ed25519, ECDSAP256, RSA4096} {
		kp, err := Generate(alg, "ci", "ci@example.com", now)
		if err != nil {
			t.Fatal(alg, err)
		}
		if !strings.HasPrefix(kp.PublicKey, "-----BEGIN PUBLIC KEY-----") || len(kp.Fingerprint) != 64 {
			t.Fatalf("%s: public key %q, fingerprint %q", alg, kp.PublicKey, kp.Fingerprint)
		}
		sig, err := SignDigest(alg, kp.Private, digest[:])
		if err != nil {
			t.Fatal(alg, err)
		}
		if err := VerifyDigest(kp.PublicKey, digest[:], sig); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
		if err := VerifyDigest(kp.PublicKey, other[:], sig); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: another digest verified: %v", alg, err)
		}
		msg, err := SignMessage(alg, kp.Private, file)
		if err != nil {
			t.Fatal(alg, err)
		}
		if err := VerifyMessage(kp.PublicKey, file, msg); err != nil {
			t.Errorf("%s message: %v", alg, err)
		}
		if err := VerifyMessage(kp.PublicKey, []byte("tampered"), msg); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: a tampered message verified: %v", alg, err)
		}
		if _, err := SignDigest(alg, kp.Private, []byte("short")); err == nil {
			t.Errorf("%s signed a digest of 5 bytes", alg)
		}
	}
	other2, _ := Generate(Ed25519, "", "", now)
	kp, _ := Generate(Ed25519, "", "", now)
	sig, _ := SignDigest(Ed25519, kp.Private, digest[:])
	if err := VerifyDigest(other2.PublicKey, digest[:], sig); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another key's signature verified: %v", err)
	}
	if _, err := Generate("dsa", "", "", now); err == nil {
		t.Error("made a dsa key")
	}
}

func TestOpenPGP(t *testing.T) {
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	kp, err := Generate(OpenPGP, "Depot release", "release@example.com", now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kp.PublicKey, "BEGIN PGP PUBLIC KEY BLOCK") || len(kp.Fingerprint) != 40 {
		t.Fatalf("public key %q, fingerprint %q", kp.PublicKey, kp.Fingerprint)
	}
	file := []byte("a jar's bytes")
	asc, err := SignFile(kp.Private, bytes.NewReader(file), now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(asc, []byte("BEGIN PGP SIGNATURE")) {
		t.Fatalf("signature %s", asc)
	}
	if err := VerifyFile(kp.PublicKey, bytes.NewReader(file), asc); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(kp.PublicKey, bytes.NewReader([]byte("other")), asc); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other bytes verified: %v", err)
	}
	if _, err := SignDigest(OpenPGP, kp.Private, make([]byte, 32)); err == nil {
		t.Fatal("an OpenPGP key signed a digest")
	}
}

func TestSealer(t *testing.T) {
	kek, err := ParseKEK("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	if hexKEK, err := ParseKEK(strings.Repeat("ab", 32)); err != nil || len(hexKEK) != 32 {
		t.Fatalf("hex: %v", err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("ab", 31)} {
		if _, err := ParseKEK(bad); err == nil {
			t.Errorf("%q taken as a key-encryption key", bad)
		}
	}
	s, _ := NewSealer(kek)
	sealed := s.Seal("k1", []byte("private"))
	if bytes.Contains(sealed, []byte("private")) {
		t.Fatal("sealed in clear")
	}
	if got, err := s.Open("k1", sealed); err != nil || string(got) != "private" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.Open("k2", sealed); !errors.Is(err, ErrWrongKEK) {
		t.Fatalf("opened as another key's: %v", err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{7}, 32))
	if _, err := other.Open("k1", sealed); !errors.Is(err, ErrWrongKEK) {
		t.Fatalf("opened with another KEK: %v", err)
	}
}
