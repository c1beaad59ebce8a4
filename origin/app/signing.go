package app

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/signing"
)

// Signing keys and signatures. Keys are made here, at an origin, and
// their private parts are kept sealed with the key-encryption key every
// origin is given (a.Sealer; nil: no key can be made or used); their
// public parts, and the signatures, replicate to edges.

var keyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,63}$`)

// NewSigningKey is a key to make.
type NewSigningKey struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	// Email is an OpenPGP key's user id's address (default: none).
	Email string `json:"email"`
}

// errNoKEK is a signing operation on an origin without a
// key-encryption key.
func errNoKEK() error {
	return apierr.New(apierr.Unavailable, "signing is not configured on this origin: set DEPOT_SIGNING_KEK (32 random bytes in base64, "+
		"the same on every origin, e.g. openssl rand -base64 32) and restart it")
}

// CreateSigningKey makes a key pair (administrators only); its private
// key never leaves the origins, sealed.
func (a *App) CreateSigningKey(ctx context.Context, p *auth.Principal, in NewSigningKey) (*meta.SigningKey, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	in.Name = strings.TrimSpace(in.Name)
	if in.Algorithm == "" {
		in.Algorithm = signing.Ed25519
	}
	switch {
	case !keyNameRE.MatchString(in.Name):
		return nil, 0, apierr.Invalid("name", "a key's name is 1 to 64 letters, digits, spaces and . _ @ -, starting with a letter or digit")
	case !slices.Contains(signing.Algorithms, in.Algorithm):
		return nil, 0, apierr.Invalid("algorithm", "algorithm must be one of %s", strings.Join(signing.Algorithms, ", "))
	case in.Email != "" && checkEmail(in.Email) != nil:
		return nil, 0, apierr.Invalid("email", "email is not an email address")
	}
	if a.Sealer == nil {
		return nil, 0, errNoKEK()
	}
	now := a.now()
	kp, err := signing.Generate(in.Algorithm, in.Name, in.Email, now)
	if err != nil {
		return nil, 0, err
	}
	k := meta.SigningKey{ID: a.NewID(), Name: in.Name, Algorithm: in.Algorithm, Fingerprint: kp.Fingerprint, PublicKey: kp.PublicKey,
		Status: meta.KeyActive, CreatedAt: now, CreatedBy: p.Name()}
	idx, err := a.commit(ctx, &meta.SigningKeyCreate{Key: k, Sealed: a.Sealer.Seal(k.ID, kp.Private)})
	if err != nil {
		return nil, idx, err
	}
	return &k, idx, nil
}

// SigningKeys lists the keys (their public parts: anyone may read them,
// to check signatures).
func (a *App) SigningKeys(context.Context, *auth.Principal) ([]meta.SigningKey, error) {
	var out []meta.SigningKey
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.SigningKeys(); return err })
	return out, err
}

// SigningKey reads one key's public record.
func (a *App) SigningKey(_ context.Context, _ *auth.Principal, id string) (*meta.SigningKey, error) {
	var k *meta.SigningKey
	err := a.view(func(tx *meta.Tx) error { var err error; k, err = tx.SigningKey(id); return err })
	return k, err
}

// RetireSigningKey stops a key signing (administrators only): the
// signatures it made go on verifying until it is deleted. Rotating a key
// is making its successor, then retiring it.
func (a *App) RetireSigningKey(ctx context.Context, p *auth.Principal, id string) (*meta.SigningKey, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.SigningKeyRetire{ID: id, At: a.now()})
	if err != nil {
		return nil, idx, err
	}
	k, err := a.SigningKey(ctx, p, id)
	return k, idx, err
}

// DeleteSigningKey deletes a key and its private part (administrators
// only); the signatures it made no longer verify.
func (a *App) DeleteSigningKey(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	return a.commit(ctx, &meta.SigningKeyDelete{ID: id})
}

// SignatureView is a signature as answered.
type SignatureView struct {
	ArtifactID string    `json:"artifact_id"`
	KeyID      string    `json:"key_id"`
	Algorithm  string    `json:"algorithm"`
	Digest     string    `json:"digest"`
	Signature  string    `json:"signature"` // base64, or an armored OpenPGP signature
	Signer     string    `json:"signer"`
	SignedAt   time.Time `json:"signed_at"`
}

// ViewSignature renders a signature.
func ViewSignature(s meta.Signature) SignatureView {
	v := SignatureView{ArtifactID: s.ArtifactID, KeyID: s.KeyID, Algorithm: s.Algorithm, Digest: s.Digest, Signer: s.Signer, SignedAt: s.SignedAt}
	if s.Algorithm == signing.OpenPGP {
		v.Signature = string(s.Value)
	} else {
		v.Signature = base64.StdEncoding.EncodeToString(s.Value)
	}
	return v
}

// Sign signs an artifact p may write with an active key: the artifact's
// SHA-256 digest, or, with an OpenPGP key, its bytes (an .asc signature,
// which Maven repositories serve beside the file). Signing again with
// the same key replaces the key's signature.
//
// An image manifest (a docker repository's artifact) signed with an
// ed25519, ECDSA or RSA key is also signed where cosign looks: a
// signature manifest tagged sha256-<hex>.sig, whose subject is the
// image (so the referrers API lists it); baseURL is the registry's
// address as the caller sees it (it names the registry in the signed
// payload).
func (a *App) Sign(ctx context.Context, p *auth.Principal, artifactID, keyID, baseURL string) (*SignatureView, uint64, error) {
	switch {
	case artifactID == "":
		return nil, 0, apierr.Invalid("artifact_id", "artifact_id is required: the artifact to sign")
	case keyID == "":
		return nil, 0, apierr.Invalid("key_id", "key_id is required: the signing key to sign with")
	}
	art, repo, err := a.Artifact(ctx, p, artifactID, meta.ActionWrite)
	if err != nil {
		return nil, 0, err
	}
	s, err := a.signature(ctx, p, art, repo, keyID, baseURL)
	if err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.SignatureAdd{Signature: s})
	if err != nil {
		return nil, idx, err
	}
	v := ViewSignature(s)
	return &v, idx, nil
}

// autoSigner is who signs uploads of a repository with a signing_key:
// the registry itself.
var autoSigner = &auth.Principal{Username: "depot-signer", Role: meta.RoleAdmin, Via: auth.CredJob}

// UploadSignature is the signature of an uploaded artifact by its
// repository's signing key (the sign-on-upload follower records it),
// made by the registry itself; baseURL names the registry in an image's
// signed payload.
func (a *App) UploadSignature(ctx context.Context, art *meta.Artifact, keyID, baseURL string) (meta.Signature, error) {
	var repo *meta.Repository
	if err := a.view(func(tx *meta.Tx) error { var err error; repo, err = tx.Repo(art.RepositoryID); return err }); err != nil {
		return meta.Signature{}, err
	}
	return a.signature(ctx, autoSigner, art, repo, keyID, baseURL)
}

// signature signs art (of repo) with key keyID as p: its digest, or its
// bytes (OpenPGP), and an image also where cosign looks; the signature
// is for the caller to record.
func (a *App) signature(ctx context.Context, p *auth.Principal, art *meta.Artifact, repo *meta.Repository, keyID, baseURL string) (meta.Signature, error) {
	var k *meta.SigningKey
	var sealed []byte
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if k, err = tx.SigningKey(keyID); err != nil {
			return err
		}
		sealed, err = tx.SealedKey(keyID)
		return err
	})
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return meta.Signature{}, apierr.New(apierr.NotFound, "no signing key %s", keyID)
	case err != nil:
		return meta.Signature{}, err
	case k.Status != meta.KeyActive:
		return meta.Signature{}, apierr.New(apierr.Conflict, "signing key %s is retired: it signs no more (make its successor)", k.Name)
	case a.Sealer == nil:
		return meta.Signature{}, errNoKEK()
	}
	private, err := a.Sealer.Open(k.ID, sealed)
	if err != nil {
		return meta.Signature{}, apierr.New(apierr.Unavailable, "%v", err)
	}
	now := a.now()
	var value []byte
	if k.Algorithm == signing.OpenPGP {
		f, err := a.Blobs.Open(ctx, art.Digest)
		if err != nil {
			return meta.Signature{}, err
		}
		value, err = signing.SignFile(private, f, now)
		f.Close()
		if err != nil {
			return meta.Signature{}, err
		}
	} else {
		digest, err := hex.DecodeString(art.Checksums.SHA256)
		if err != nil || len(digest) == 0 {
			return meta.Signature{}, fmt.Errorf("artifact %s has no SHA-256", art.ID)
		}
		if value, err = signing.SignDigest(k.Algorithm, private, digest); err != nil {
			return meta.Signature{}, err
		}
	}
	if att, ok := a.Formats[repo.Format].(format.SignatureAttacher); ok && k.Algorithm != signing.OpenPGP {
		via := &format.Request{Principal: p, Repo: repo, BaseURL: baseURL}
		err := att.AttachSignature(ctx, a.Writer, via, art, func(payload []byte) (string, error) {
			sig, err := signing.SignMessage(k.Algorithm, private, payload)
			return base64.StdEncoding.EncodeToString(sig), err
		})
		if err != nil {
			return meta.Signature{}, fmt.Errorf("keeping the signature where cosign finds it: %w", err)
		}
	}
	return meta.Signature{ArtifactID: art.ID, RepositoryID: art.RepositoryID, KeyID: k.ID, Algorithm: k.Algorithm,
		Digest: strings.ToLower(art.Checksums.SHA256), Value: value, Signer: p.Name(), SignedAt: now}, nil
}

// Verification is whether an artifact's signatures verify.
type Verification struct {
	ArtifactID string `json:"artifact_id"`
	// Verified: at least one signature verifies the artifact's bytes;
	// KeyID, Algorithm, Signer and SignedAt are the newest such one's.
	Verified   bool              `json:"verified"`
	KeyID      string            `json:"key_id,omitempty"`
	Algorithm  string            `json:"algorithm,omitempty"`
	Signer     string            `json:"signer,omitempty"`
	SignedAt   *time.Time        `json:"signed_at,omitempty"`
	Signatures []SignatureResult `json:"signatures"`
}

// SignatureResult is one signature's check.
type SignatureResult struct {
	SignatureView
	KeyName     string `json:"key_name,omitempty"`
	KeyStatus   string `json:"key_status"` // active, retired, deleted
	Fingerprint string `json:"fingerprint,omitempty"`
	Valid       bool   `json:"valid"`
	Reason      string `json:"reason,omitempty"` // why not valid
}

// Verify checks an artifact's signatures (p must be able to read it)
// against its current bytes and the keys' public parts.
func (a *App) Verify(ctx context.Context, p *auth.Principal, artifactID string) (*Verification, error) {
	art, _, err := a.Artifact(ctx, p, artifactID, meta.ActionRead)
	if err != nil {
		return nil, err
	}
	var sigs []meta.Signature
	keys := map[string]*meta.SigningKey{}
	err = a.view(func(tx *meta.Tx) error {
		if sigs, err = tx.Signatures(art.ID); err != nil {
			return err
		}
		for _, s := range sigs {
			if k, err := tx.SigningKey(s.KeyID); err == nil {
				keys[s.KeyID] = k
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &Verification{ArtifactID: art.ID, Signatures: []SignatureResult{}}
	for _, s := range sigs {
		r := SignatureResult{SignatureView: ViewSignature(s), KeyStatus: "deleted"}
		k := keys[s.KeyID]
		if k != nil {
			r.KeyName, r.KeyStatus, r.Fingerprint = k.Name, k.Status, k.Fingerprint
		}
		switch err := a.check(ctx, art, s, k); {
		case err == nil:
			r.Valid = true
			if !out.Verified || s.SignedAt.After(*out.SignedAt) {
				at := s.SignedAt
				out.Verified, out.KeyID, out.Algorithm, out.Signer, out.SignedAt = true, s.KeyID, s.Algorithm, s.Signer, &at
			}
		default:
			r.Reason = err.Error()
		}
		out.Signatures = append(out.Signatures, r)
	}
	return out, nil
}

// check checks one signature of art by key k (nil: deleted).
func (a *App) check(ctx context.Context, art *meta.Artifact, s meta.Signature, k *meta.SigningKey) error {
	switch {
	case k == nil:
		return fmt.Errorf("its key %s was deleted", s.KeyID)
	case !strings.EqualFold(s.Digest, art.Checksums.SHA256):
		return fmt.Errorf("it is of other bytes (SHA-256 %s)", s.Digest)
	case k.Algorithm == signing.OpenPGP:
		f, err := a.Blobs.Open(ctx, art.Digest)
		if err != nil {
			return err
		}
		defer f.Close()
		return signing.VerifyFile(k.PublicKey, f, s.Value)
	}
	digest, err := hex.DecodeString(art.Checksums.SHA256)
	if err != nil {
		return err
	}
	return signing.VerifyDigest(k.PublicKey, digest, s.Value)
}
