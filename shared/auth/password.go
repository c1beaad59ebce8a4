package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are the argon2id cost parameters. Memory is in KiB.
type PasswordParams struct {
	Memory      uint32
	Iterations  uint32
	Parallelism uint8
}

// DefaultPasswordParams is the OWASP minimum recommendation for argon2id
// (19 MiB, 2 iterations, 1 lane). It is a var so deployments can raise it;
// existing hashes keep verifying because VerifyPassword reads the parameters
// from each encoded hash.
var DefaultPasswordParams = PasswordParams{Memory: 19456, Iterations: 2, Parallelism: 1}

const (
	argonSaltLen = 16
	argonKeyLen  = 32

	// Policy bounds. The byte cap keeps hashing cost predictable and stops
	// multi-megabyte "passwords" being fed to the KDF.
	minPasswordChars = 8
	maxPasswordBytes = 256

	// Ceilings on parameters accepted from an encoded hash. Hashes come from
	// our own store, but a corrupted or injected row must not be able to make
	// a single login allocate more than 1 GiB or spin for minutes.
	argonMaxMemory      = 1 << 20 // KiB, i.e. 1 GiB
	argonMaxIterations  = 64
	argonMaxParallelism = 64
	argonMinSalt        = 8 // RFC 9106 minimum
	argonMaxSalt        = 64
	argonMinKey         = 16
	argonMaxKey         = 64
)

// OrDefault is p, or DefaultPasswordParams when p is zero.
func (p PasswordParams) OrDefault() PasswordParams {
	if p == (PasswordParams{}) {
		return DefaultPasswordParams
	}
	return p
}

// HashPassword hashes pw with DefaultPasswordParams and returns a PHC-style
// string: $argon2id$v=19$m=<KiB>,t=<iters>,p=<par>$<salt>$<hash>.
func HashPassword(pw string) (string, error) {
	return HashPasswordWith(DefaultPasswordParams, pw)
}

// HashPasswordWith is HashPassword with explicit parameters (tests use cheap
// ones). It does not apply ValidatePasswordPolicy: callers enforce the policy
// where passwords are chosen, not where they are stored.
func HashPasswordWith(p PasswordParams, pw string) (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: reading salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, p.Iterations, p.Memory, p.Parallelism, argonKeyLen)
	return encodePHC(p, salt, key), nil
}

// VerifyPassword reports whether pw matches the encoded argon2id hash. Any
// malformed or out-of-bounds encoding yields false.
func VerifyPassword(encoded, pw string) bool {
	p, salt, want, err := decodePHC(encoded)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, p.Iterations, p.Memory, p.Parallelism, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// ValidatePasswordPolicy checks a user-chosen password. Length is counted in
// characters for the minimum (so non-ASCII passwords are not penalised) and in
// bytes for the maximum (which is what bounds hashing cost).
func ValidatePasswordPolicy(pw string) error {
	if !utf8.ValidString(pw) {
		return errors.New("password must be valid UTF-8 text")
	}
	if utf8.RuneCountInString(pw) < minPasswordChars {
		return fmt.Errorf("password must be at least %d characters long", minPasswordChars)
	}
	if len(pw) > maxPasswordBytes {
		return fmt.Errorf("password must be at most %d bytes long", maxPasswordBytes)
	}
	return nil
}

func (p PasswordParams) validate() error {
	switch {
	case p.Iterations < 1:
		return errors.New("auth: argon2 iterations must be at least 1")
	case p.Parallelism < 1:
		return errors.New("auth: argon2 parallelism must be at least 1")
	case p.Memory < 8*uint32(p.Parallelism):
		// argon2 would silently raise memory, making the encoded m= lie.
		return errors.New("auth: argon2 memory must be at least 8 KiB per lane")
	case p.Memory > argonMaxMemory || p.Iterations > argonMaxIterations || p.Parallelism > argonMaxParallelism:
		// Same ceilings as decodePHC, so we never write a hash we would refuse to verify.
		return errors.New("auth: argon2 parameters exceed the supported maximum")
	}
	return nil
}

func encodePHC(p PasswordParams, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Iterations, p.Parallelism,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// decodePHC parses an encoding produced by encodePHC. It is strict about
// layout and bounds every value so VerifyPassword never panics inside argon2
// and never does unbounded work.
func decodePHC(encoded string) (p PasswordParams, salt, key []byte, err error) {
	bad := func(why string) (PasswordParams, []byte, []byte, error) {
		return PasswordParams{}, nil, nil, errors.New("auth: malformed password hash: " + why)
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" {
		return bad("wrong number of fields")
	}
	if parts[1] != "argon2id" {
		return bad("unsupported algorithm")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return bad("unsupported version")
	}

	kv := strings.Split(parts[3], ",")
	if len(kv) != 3 {
		return bad("parameters")
	}
	m, ok1 := parsePHCParam(kv[0], "m=", 32)
	t, ok2 := parsePHCParam(kv[1], "t=", 32)
	par, ok3 := parsePHCParam(kv[2], "p=", 8)
	if !ok1 || !ok2 || !ok3 {
		return bad("parameters")
	}
	p = PasswordParams{Memory: uint32(m), Iterations: uint32(t), Parallelism: uint8(par)}
	if p.validate() != nil {
		return bad("parameters out of range")
	}

	var ok bool
	if salt, ok = decodeB64Canonical(parts[4]); !ok || len(salt) < argonMinSalt || len(salt) > argonMaxSalt {
		return bad("salt")
	}
	if key, ok = decodeB64Canonical(parts[5]); !ok || len(key) < argonMinKey || len(key) > argonMaxKey {
		return bad("hash")
	}
	return p, salt, key, nil
}

// decodeB64Canonical decodes raw std base64 and insists the input is exactly
// what we would have written: the decoder otherwise skips embedded CR/LF, and
// a hash should have only one spelling.
func decodeB64Canonical(s string) ([]byte, bool) {
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || base64.RawStdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// parsePHCParam parses "<prefix><decimal>" as an unsigned integer of the given
// bit size; ParseUint already rejects signs, spaces and overflow.
func parsePHCParam(s, prefix string, bits int) (uint64, bool) {
	rest, found := strings.CutPrefix(s, prefix)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, bits)
	return n, err == nil
}
