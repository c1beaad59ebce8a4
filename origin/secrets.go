package origin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/signing"
)

// The values an origin keeps in its data directory across restarts: its
// node id, its cluster key, the JWT secret generated when none is given.

// persisted returns the value kept in path, creating it from given (or,
// when given is empty, from gen) the first time. A given value wins over
// the kept one without rewriting it.
func persisted(path, given string, gen func() string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && given != "":
		return given, nil
	case err == nil:
		return strings.TrimSpace(string(b)), nil
	case !os.IsNotExist(err):
		return "", err
	}
	if given == "" {
		given = gen()
	}
	return given, writeFileSync(path, []byte(given+"\n"))
}

func jwtSecret(cfg Config) ([]byte, bool, error) {
	if cfg.JWTSecret != "" {
		if len(cfg.JWTSecret) < 32 {
			return nil, false, errors.New("JWT_SECRET must be at least 32 characters")
		}
		return []byte(cfg.JWTSecret), false, nil
	}
	path := filepath.Join(cfg.DataDir, "jwt-secret")
	if b, err := os.ReadFile(path); err == nil {
		return []byte(strings.TrimSpace(string(b))), false, nil
	}
	s := fmt.Sprintf("%x", auth.RandomSecret())
	return []byte(s), true, writeFileSync(path, []byte(s+"\n"))
}

// signingSealer is the sealer of signing keys of DEPOT_SIGNING_KEK (nil
// when it is not set: signing is off).
func signingSealer(cfg Config) (*signing.Sealer, error) {
	if cfg.SigningKEK == "" {
		return nil, nil
	}
	kek, err := signing.ParseKEK(cfg.SigningKEK)
	if err != nil {
		return nil, fmt.Errorf("DEPOT_SIGNING_KEK: %w", err)
	}
	return signing.NewSealer(kek)
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
