package peerauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a cluster key in bytes.
const KeySize = 32

// Key is a cluster key. Its String and %v forms never show the key; use
// Encode where the key itself must be written (depot keygen, a key file).
type Key [KeySize]byte

// NewKey returns a fresh random key.
func NewKey() Key {
	var k Key
	_, _ = rand.Read(k[:]) // never fails (crypto/rand aborts the process instead)
	return k
}

// ParseKey decodes a key in standard base64, as Encode writes it.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		// The decoder's error quotes an offset, never the input.
		return k, fmt.Errorf("cluster key is not standard base64: %w", err)
	}
	if len(b) != KeySize {
		return k, fmt.Errorf("cluster key decodes to %d bytes, want %d", len(b), KeySize)
	}
	copy(k[:], b)
	if k.IsZero() {
		return k, errors.New("cluster key is all zero bytes")
	}
	return k, nil
}

// Encode is the key in standard base64.
func (k Key) Encode() string { return base64.StdEncoding.EncodeToString(k[:]) }

// IsZero reports whether k is unset.
func (k Key) IsZero() bool { return k == Key{} }

// String keeps the key out of logs and error messages.
func (k Key) String() string { return "[cluster key]" }

// GoString is String for %#v.
func (k Key) GoString() string { return k.String() }
