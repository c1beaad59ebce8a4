// Package signing makes signing keys and signatures, and checks them:
// ed25519 (the default), ECDSA P-256 and RSA-4096 keys sign an
// artifact's SHA-256 digest (and, for container images, the payload
// cosign signs); OpenPGP keys (version 4, EdDSA, as Debian's gpg reads
// them) make detached armored signatures of a file's bytes, the .asc
// files Maven repositories serve. Private keys leave this package only
// sealed with the key-encryption key (Sealer); public keys are PEM
// (PKIX) or armored OpenPGP. Origins sign; anyone with the public key
// verifies (edges too, from their replica).
package signing

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Algorithms.
const (
	Ed25519   = "ed25519"
	ECDSAP256 = "ecdsa-p256"
	RSA4096   = "rsa-4096"
	OpenPGP   = "openpgp"
)

// Algorithms lists the algorithms a key is made with, the default first.
var Algorithms = []string{Ed25519, ECDSAP256, RSA4096, OpenPGP}

// ErrBadSignature is a signature that does not verify.
var ErrBadSignature = errors.New("the signature does not verify")

// KeyPair is a key made by Generate.
type KeyPair struct {
	Algorithm string
	// PublicKey is PEM (a PKIX public key), or an armored OpenPGP
	// public key.
	PublicKey string
	// Fingerprint is the SHA-256 of the PKIX public key (hex), or the
	// OpenPGP key's fingerprint (hex, upper case, as gpg shows it).
	Fingerprint string
	// Private is the private key: PKCS #8 DER, or OpenPGP private key
	// packets. Seal it before it is stored.
	Private []byte
}

// Generate makes a key pair of algorithm; an OpenPGP key's user id is
// name <email>.
func Generate(algorithm, name, email string, now time.Time) (*KeyPair, error) {
	var priv crypto.Signer
	switch algorithm {
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		priv = k
	case ECDSAP256:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		priv = k
	case RSA4096:
		k, err := rsa.GenerateKey(rand.Reader, 4096)
		if err != nil {
			return nil, err
		}
		priv = k
	case OpenPGP:
		return generatePGP(name, email, now)
	default:
		return nil, fmt.Errorf("algorithm %q: one of %s", algorithm, strings.Join(Algorithms, ", "))
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(pub)
	return &KeyPair{Algorithm: algorithm, Private: der, Fingerprint: hex.EncodeToString(sum[:]),
		PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))}, nil
}

// pgpConfig makes version 4 EdDSA keys and SHA-256 signatures, which
// gpg 2.2 reads.
func pgpConfig(now time.Time) *packet.Config {
	return &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Curve: packet.Curve25519, DefaultHash: crypto.SHA256,
		Time: func() time.Time { return now }, V6Keys: false}
}

func generatePGP(name, email string, now time.Time) (*KeyPair, error) {
	e, err := openpgp.NewEntity(name, "", email, pgpConfig(now))
	if err != nil {
		return nil, err
	}
	var priv, pub bytes.Buffer
	if err := e.SerializePrivate(&priv, pgpConfig(now)); err != nil {
		return nil, err
	}
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &KeyPair{Algorithm: OpenPGP, Private: priv.Bytes(), PublicKey: pub.String() + "\n",
		Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))}, nil
}

// SignDigest signs a SHA-256 digest (32 bytes) with a private key of
// algorithm (not OpenPGP): ed25519 signs the 32 bytes as its message;
// ECDSA (ASN.1) and RSA (PKCS #1 v1.5) sign them as a SHA-256 hash, so
// `openssl dgst -sha256 -verify` checks such a signature against the
// file itself.
func SignDigest(algorithm string, private, digest []byte) ([]byte, error) {
	if len(digest) != sha256.Size {
		return nil, fmt.Errorf("a SHA-256 digest is %d bytes, not %d", sha256.Size, len(digest))
	}
	k, err := parsePrivate(algorithm, private)
	if err != nil {
		return nil, err
	}
	if _, ok := k.(ed25519.PrivateKey); ok {
		return k.Sign(rand.Reader, digest, crypto.Hash(0))
	}
	return k.Sign(rand.Reader, digest, crypto.SHA256)
}

// SignMessage signs a message (cosign's payload, say): ed25519 signs it
// whole, ECDSA and RSA its SHA-256.
func SignMessage(algorithm string, private, msg []byte) ([]byte, error) {
	if algorithm == Ed25519 {
		k, err := parsePrivate(algorithm, private)
		if err != nil {
			return nil, err
		}
		return k.Sign(rand.Reader, msg, crypto.Hash(0))
	}
	sum := sha256.Sum256(msg)
	return SignDigest(algorithm, private, sum[:])
}

func parsePrivate(algorithm string, der []byte) (crypto.Signer, error) {
	if algorithm == OpenPGP {
		return nil, fmt.Errorf("an OpenPGP key signs files (SignFile), not digests")
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("reading the private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the private key cannot sign")
	}
	return s, nil
}

// VerifyDigest checks a signature of a SHA-256 digest made by SignDigest
// against a PEM public key.
func VerifyDigest(publicPEM string, digest, sig []byte) error {
	pub, err := ParsePublic(publicPEM)
	if err != nil {
		return err
	}
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, digest, sig)
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, digest, sig)
	case *rsa.PublicKey:
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest, sig) == nil
	}
	if !ok {
		return ErrBadSignature
	}
	return nil
}

// VerifyMessage checks a signature made by SignMessage.
func VerifyMessage(publicPEM string, msg, sig []byte) error {
	pub, err := ParsePublic(publicPEM)
	if err != nil {
		return err
	}
	if k, ok := pub.(ed25519.PublicKey); ok {
		if !ed25519.Verify(k, msg, sig) {
			return ErrBadSignature
		}
		return nil
	}
	sum := sha256.Sum256(msg)
	return VerifyDigest(publicPEM, sum[:], sig)
}

// ParsePublic reads a PEM public key.
func ParsePublic(publicPEM string) (crypto.PublicKey, error) {
	b, _ := pem.Decode([]byte(publicPEM))
	if b == nil || b.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("not a PEM public key")
	}
	return x509.ParsePKIXPublicKey(b.Bytes)
}

// SignFile makes a detached armored OpenPGP signature of r's bytes (an
// .asc file) with an OpenPGP private key.
func SignFile(private []byte, r io.Reader, now time.Time) ([]byte, error) {
	e, err := openpgp.ReadEntity(packet.NewReader(bytes.NewReader(private)))
	if err != nil {
		return nil, fmt.Errorf("reading the OpenPGP key: %w", err)
	}
	var out bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&out, e, r, pgpConfig(now)); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// VerifyFile checks a detached armored OpenPGP signature of r's bytes
// against an armored public key.
func VerifyFile(publicArmored string, r io.Reader, armoredSig []byte) error {
	keys, err := openpgp.ReadArmoredKeyRing(strings.NewReader(publicArmored))
	if err != nil {
		return fmt.Errorf("reading the OpenPGP public key: %w", err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(keys, r, bytes.NewReader(armoredSig), nil); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return nil
}
