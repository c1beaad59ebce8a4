package signing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KEKSize is the length of a key-encryption key: 32 bytes (AES-256).
const KEKSize = 32

// ParseKEK reads a key-encryption key: 32 bytes, written as 64
// hexadecimal digits or in base64 (openssl rand -base64 32).
func ParseKEK(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KEKSize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KEKSize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("the key-encryption key must be %d random bytes, in base64 (openssl rand -base64 32) or as %d hexadecimal digits", KEKSize, 2*KEKSize)
}

// Sealer seals private keys with the key-encryption key (AES-256-GCM,
// bound to the key's id, so a sealed key cannot be passed off as
// another's).
type Sealer struct{ aead cipher.AEAD }

// NewSealer makes a sealer of a key-encryption key.
func NewSealer(kek []byte) (*Sealer, error) {
	if len(kek) != KEKSize {
		return nil, fmt.Errorf("a key-encryption key is %d bytes", KEKSize)
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts a private key of key id: the nonce, then the sealed
// bytes.
func (s *Sealer) Seal(id string, private []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, private, []byte("depot signing key "+id))
}

// ErrWrongKEK is a sealed key this key-encryption key does not open.
var ErrWrongKEK = errors.New("the key-encryption key does not open this signing key (every origin needs the same DEPOT_SIGNING_KEK)")

// Open decrypts what Seal sealed for key id.
func (s *Sealer) Open(id string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrWrongKEK
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte("depot signing key "+id))
	if err != nil {
		return nil, ErrWrongKEK
	}
	return out, nil
}
