package meta

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// Signing: keys (their public part, which edges hold too, to check
// signatures), their sealed private parts (origins only: an unfed kind),
// and signatures of artifacts, one per artifact and key, kept with the
// artifact's repository and dropped with the artifact.

const (
	KindSigningKey      Kind    = 32
	KindSigningSecret   Kind    = 33
	KindSignature       Kind    = 34
	CmdSigningKeyCreate CmdType = 59
	CmdSigningKeyRetire CmdType = 60
	CmdSigningKeyDelete CmdType = 61
	CmdSignatureAdd     CmdType = 62
	CmdSignaturesAdd    CmdType = 63
)

func init() {
	declareKind(KindSigningKey, kindDecl{Name: "signing keys", Bucket: "signing_keys"})
	declareKind(KindSigningSecret, kindDecl{Name: "signing key secrets", Bucket: "signing_secrets", Unfed: true})
	declareKind(KindSignature, kindDecl{Name: "signatures", Bucket: "signatures", Repo: scanRepo})
	declareCommand(CmdSigningKeyCreate, func() Command { return new(SigningKeyCreate) })
	declareCommand(CmdSigningKeyRetire, func() Command { return new(SigningKeyRetire) })
	declareCommand(CmdSigningKeyDelete, func() Command { return new(SigningKeyDelete) })
	declareCommand(CmdSignatureAdd, func() Command { return new(SignatureAdd) })
	declareCommand(CmdSignaturesAdd, func() Command { return new(SignaturesAdd) })
}

// Signing key statuses: an active key signs; a retired one no longer
// does, and the signatures it made still verify until it is deleted.
const (
	KeyActive  = "active"
	KeyRetired = "retired"
)

// SigningKey is a signing key's public record.
type SigningKey struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Algorithm   string     `json:"algorithm"`
	Fingerprint string     `json:"fingerprint"`
	PublicKey   string     `json:"public_key"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	CreatedBy   string     `json:"created_by"`
	RetiredAt   *time.Time `json:"retired_at,omitempty"`
}

// signingSecret is a key's private part, sealed with the key-encryption
// key (the signing package's Sealer).
type signingSecret struct {
	Sealed []byte `json:"sealed"`
}

// Signature is an artifact's signature by a key.
type Signature struct {
	ArtifactID   string `json:"artifact_id"`
	RepositoryID string `json:"repository_id"`
	KeyID        string `json:"key_id"`
	Algorithm    string `json:"algorithm"`
	// Digest is the artifact's SHA-256 (hex) the signature is of.
	Digest string `json:"digest"`
	// Value is the signature: raw bytes, or an armored OpenPGP signature
	// of the file's bytes.
	Value    []byte    `json:"value"`
	Signer   string    `json:"signer"`
	SignedAt time.Time `json:"signed_at"`
}

// SigningKeyCreate records a new key and its sealed private part; names
// are unique (case-insensitively).
type SigningKeyCreate struct {
	Key    SigningKey `json:"key"`
	Sealed []byte     `json:"sealed"`
}

// SigningKeyRetire retires an active key.
type SigningKeyRetire struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// SigningKeyDelete deletes a key and its private part; the signatures it
// made stay, and no longer verify.
type SigningKeyDelete struct {
	ID string `json:"id"`
}

// SignatureAdd records a signature by an active key of an artifact whose
// SHA-256 is the signature's digest, replacing the key's earlier one.
type SignatureAdd struct {
	Signature Signature `json:"signature"`
}

// SignaturesAdd is the sign-on-upload follower's: it records signatures
// (one whose artifact is gone or changed, or whose key no longer signs,
// is skipped) and moves the follower's cursor in the change feed from
// From (refused, a conflict, when the cursor is elsewhere) to To.
type SignaturesAdd struct {
	Signatures []Signature `json:"signatures,omitempty"`
	From       uint64      `json:"from"`
	To         uint64      `json:"to"`
}

// SignerState is the sign-on-upload follower's replicated state: how far
// it has read the change feed.
type SignerState struct {
	Cursor uint64 `json:"cursor"`
}

const stateSigner = "signer"

// MaxSignaturesAdd bounds one SignaturesAdd.
const MaxSignaturesAdd = 500

// Signer reads the sign-on-upload follower's state.
func (tx *Tx) Signer() SignerState {
	var s SignerState
	if raw, _ := tx.lookup(Space(KindState), stateSigner); raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (*SignaturesAdd) Type() CmdType { return CmdSignaturesAdd }
func (*SignaturesAdd) Scope() string { return "" }

func (c *SignaturesAdd) apply(tx *Tx) error {
	if len(c.Signatures) > MaxSignaturesAdd || c.To == 0 {
		return Invalidf("a signatures batch holds at most %d signatures and moves the cursor", MaxSignaturesAdd)
	}
	st := tx.Signer()
	if st.Cursor != c.From {
		return Conflictf("the signer's cursor is at %d, not %d", st.Cursor, c.From)
	}
	st.Cursor = c.To
	if err := tx.putRec(KindState, stateSigner, st); err != nil {
		return err
	}
	for _, s := range c.Signatures {
		err := (&SignatureAdd{Signature: s}).apply(tx)
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalid) {
			return err
		}
	}
	return nil
}

func (*SigningKeyCreate) Type() CmdType { return CmdSigningKeyCreate }
func (*SigningKeyRetire) Type() CmdType { return CmdSigningKeyRetire }
func (*SigningKeyDelete) Type() CmdType { return CmdSigningKeyDelete }
func (*SignatureAdd) Type() CmdType     { return CmdSignatureAdd }
func (*SigningKeyCreate) Scope() string { return "" }
func (*SigningKeyRetire) Scope() string { return "" }
func (*SigningKeyDelete) Scope() string { return "" }
func (c *SignatureAdd) Scope() string   { return c.Signature.RepositoryID }

func (c *SigningKeyCreate) apply(tx *Tx) error {
	k := c.Key
	if k.ID == "" || k.Name == "" || k.PublicKey == "" || len(c.Sealed) == 0 {
		return Invalidf("a signing key needs an id, a name, a public key and its sealed private key")
	}
	if tx.exists(KindSigningKey, k.ID) {
		return Conflictf("signing key %s exists", k.ID)
	}
	keys, err := tx.SigningKeys()
	if err != nil {
		return err
	}
	for _, o := range keys {
		if strings.EqualFold(o.Name, k.Name) {
			return Conflictf("a signing key named %s exists", o.Name)
		}
	}
	k.Status = KeyActive
	if err := tx.putRec(KindSigningSecret, k.ID, signingSecret{Sealed: c.Sealed}); err != nil {
		return err
	}
	return tx.putRec(KindSigningKey, k.ID, k)
}

func (c *SigningKeyRetire) apply(tx *Tx) error {
	k, err := tx.SigningKey(c.ID)
	if err != nil {
		return err
	}
	if k.Status == KeyRetired {
		return nil
	}
	at := c.At
	k.Status, k.RetiredAt = KeyRetired, &at
	return tx.putRec(KindSigningKey, k.ID, k)
}

func (c *SigningKeyDelete) apply(tx *Tx) error {
	if _, err := tx.SigningKey(c.ID); err != nil {
		return err
	}
	if tx.exists(KindSigningSecret, c.ID) {
		if err := tx.delRec(KindSigningSecret, c.ID); err != nil {
			return err
		}
	}
	return tx.delRec(KindSigningKey, c.ID)
}

func (c *SignatureAdd) apply(tx *Tx) error {
	s := c.Signature
	k, err := tx.SigningKey(s.KeyID)
	if err != nil {
		return err
	}
	if k.Status != KeyActive {
		return Conflictf("signing key %s is retired: it signs no more", k.Name)
	}
	a, err := tx.Artifact(s.ArtifactID)
	if err != nil {
		return err
	}
	if a.RepositoryID != s.RepositoryID || !strings.EqualFold(a.Checksums.SHA256, s.Digest) || len(s.Value) == 0 {
		return Invalidf("the signature is not of artifact %s as it is", a.ID)
	}
	return tx.putRec(KindSignature, key(s.ArtifactID, s.KeyID), s)
}

// SigningKey reads a key's public record.
func (tx *Tx) SigningKey(id string) (*SigningKey, error) {
	return getRec[SigningKey](tx, KindSigningKey, id, "signing key")
}

// SigningKeys lists the keys, oldest first.
func (tx *Tx) SigningKeys() ([]SigningKey, error) {
	out, err := listRecs[SigningKey](tx, KindSigningKey, "")
	slices.SortFunc(out, func(a, b SigningKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// SealedKey is a key's sealed private part (origins only).
func (tx *Tx) SealedKey(id string) ([]byte, error) {
	s, err := getRec[signingSecret](tx, KindSigningSecret, id, "signing key")
	if err != nil {
		return nil, err
	}
	return s.Sealed, nil
}

// Signatures lists an artifact's signatures, by key id.
func (tx *Tx) Signatures(artifactID string) ([]Signature, error) {
	return listRecs[Signature](tx, KindSignature, key(artifactID, ""))
}

// forgetSignatures drops the signatures of an artifact that goes.
func (tx *Tx) forgetSignatures(artifactID string) error {
	var keys []string
	_ = tx.scan(Space(KindSignature), key(artifactID, ""), func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	})
	for _, k := range keys {
		if err := tx.delRec(KindSignature, k); err != nil {
			return err
		}
	}
	return nil
}
