package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// TokenPrefix marks depot API tokens so they are recognisable in configs,
// logs and secret scanners, and cannot be confused with JWTs.
const TokenPrefix = "dpt_"

// EdgeTokenPrefix marks edge node credentials: they authenticate an edge
// node to the origins' edge endpoints and nothing else.
const EdgeTokenPrefix = "dpe_"

// unambiguousAlphabet omits characters that are easily misread when a
// generated password is copied by hand: 0/O/o, 1/l/I.
const unambiguousAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789"

const randomPasswordLen = 20

// NewAPIToken returns a new API token secret ("dpt_" followed by 43 base64url
// characters encoding 32 random bytes) and the hash to store. The secret is
// shown to the user once and never persisted.
func NewAPIToken() (secret, hash string, err error) { return newToken(TokenPrefix) }

// NewEdgeToken returns a new edge node credential ("dpe_" and 32 random
// bytes) and the hash to store, as NewAPIToken does.
func NewEdgeToken() (secret, hash string, err error) { return newToken(EdgeTokenPrefix) }

func newToken(prefix string) (secret, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashAPIToken(secret), nil
}

// HashAPIToken returns the lowercase hex SHA-256 of the whole secret. A fast
// unsalted hash is appropriate because the secret carries 256 bits of entropy
// (nothing to brute-force), and it lets the store look tokens up by hash.
func HashAPIToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewID returns 16 random bytes as 32 lowercase hex characters.
func NewID() string {
	b := make([]byte, 16)
	rand.Read(b) // never returns an error; crashes the program instead (Go 1.24+)
	return hex.EncodeToString(b)
}

// RandomPassword returns a 20-character password drawn uniformly from an
// unambiguous 56-character alphabet (~116 bits), for generated admin accounts.
func RandomPassword() string {
	const n = len(unambiguousAlphabet)
	// Reject bytes at or above the largest multiple of n to avoid modulo bias.
	const limit = 256 - 256%n
	out := make([]byte, 0, randomPasswordLen)
	buf := make([]byte, 2*randomPasswordLen)
	for len(out) < randomPasswordLen {
		rand.Read(buf)
		for _, b := range buf {
			if int(b) < limit && len(out) < randomPasswordLen {
				out = append(out, unambiguousAlphabet[int(b)%n])
			}
		}
	}
	return string(out)
}

// RandomSecret returns 32 random bytes, suitable as an HS256 JWT secret.
func RandomSecret() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}
