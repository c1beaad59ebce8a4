package meta

import (
	"errors"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

func TestSigningRecords(t *testing.T) {
	l := &testLog{t: t, s: open(t)}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.must(&RepoCreate{Repo: Repository{ID: "r1", Name: "files", Format: "generic", CreatedAt: t0, UpdatedAt: t0}})
	l.must(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "x/1/x.bin", Digest: "sha256:aa", Checksums: blob.Checksums{SHA256: "aa"}, UploadedAt: t0}})
	l.must(&SigningKeyCreate{Key: SigningKey{ID: "k1", Name: "Release", Algorithm: "ed25519", PublicKey: "pem", CreatedAt: t0}, Sealed: []byte("s")})
	_ = l.s.View(func(tx *Tx) error { // edges get the public record, never the sealed one
		changes, _, err := tx.Changes(0, ChangeFilter{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[Kind]bool{}
		for _, c := range changes {
			seen[c.Kind] = true
		}
		if !seen[KindSigningKey] || seen[KindSigningSecret] {
			t.Errorf("the change feed: key %v, secret %v", seen[KindSigningKey], seen[KindSigningSecret])
		}
		return nil
	})
	if err := l.apply(&SigningKeyCreate{Key: SigningKey{ID: "k2", Name: "release", Algorithm: "ed25519", PublicKey: "pem", CreatedAt: t0}, Sealed: []byte("s")}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second key of the same name: %v", err)
	}
	sig := Signature{ArtifactID: "a1", RepositoryID: "r1", KeyID: "k1", Algorithm: "ed25519", Digest: "AA", Value: []byte("v"), SignedAt: t0}
	bad := sig
	bad.Digest = "bb"
	if err := l.apply(&SignatureAdd{Signature: bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a signature of other bytes: %v", err)
	}
	l.must(&SignatureAdd{Signature: sig})
	l.must(&SignatureAdd{Signature: sig}) // signed again: replaced, still one
	sigs := func() []Signature {
		var out []Signature
		_ = l.s.View(func(tx *Tx) (err error) { out, err = tx.Signatures("a1"); return err })
		return out
	}
	if n := len(sigs()); n != 1 {
		t.Fatalf("%d signatures", n)
	}
	l.must(&SigningKeyRetire{ID: "k1", At: t0})
	if err := l.apply(&SignatureAdd{Signature: sig}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a retired key signed: %v", err)
	}
	l.must(&SigningKeyDelete{ID: "k1"})
	if n := len(sigs()); n != 1 {
		t.Fatalf("a deleted key's signature went: %d", n)
	}
	_ = l.s.View(func(tx *Tx) error {
		if _, err := tx.SealedKey("k1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the deleted key's secret: %v", err)
		}
		return nil
	})
	l.must(&ArtifactDelete{ID: "a1"})
	if n := len(sigs()); n != 0 {
		t.Fatalf("the deleted artifact keeps %d signatures", n)
	}
}
