package maven

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
)

// MaxSidecar bounds a checksum sidecar body: a sha512 in hex is 128
// bytes; some tools add "  <file name>" after it.
const MaxSidecar = 1024

// hexLen is the length of each algorithm's digest in hex.
var hexLen = map[string]int{"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}

// ParseSidecar reads the digest out of a checksum sidecar body for alg:
// the first whitespace-separated field, case-insensitive hex of the
// algorithm's length ("<hex>" from Maven and Gradle, "<hex>  <file>" from
// sha1sum-style tools). It returns lowercase hex.
func ParseSidecar(alg string, body []byte) (string, error) {
	want, ok := hexLen[alg]
	if !ok {
		return "", format.BadRequest("unknown checksum algorithm %q", alg)
	}
	if len(body) > MaxSidecar {
		return "", format.BadRequest("%s checksum file is longer than %d bytes", alg, MaxSidecar)
	}
	fields := strings.Fields(string(body))
	if len(fields) == 0 {
		return "", format.BadRequest("%s checksum file is empty", alg)
	}
	sum := strings.ToLower(fields[0])
	if len(sum) != want {
		return "", format.BadRequest("%s checksum must be %d hex digits, got %d characters", alg, want, len(sum))
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return "", format.BadRequest("%s checksum is not hexadecimal", alg)
	}
	return sum, nil
}

// Stored returns the checksum of alg among a file's stored checksums.
func Stored(alg string, c blob.Checksums) string {
	switch alg {
	case "md5":
		return c.MD5
	case "sha1":
		return c.SHA1
	case "sha256":
		return c.SHA256
	case "sha512":
		return c.SHA512
	}
	return ""
}

// VerifySidecar checks an uploaded sidecar against the stored file's
// checksums: a 400 that names both digests when they differ.
func VerifySidecar(alg string, body []byte, stored blob.Checksums) error {
	sum, err := ParseSidecar(alg, body)
	if err != nil {
		return err
	}
	if have := Stored(alg, stored); have != "" && have != sum {
		return format.BadRequest("%s checksum %s does not match the stored file (%s)", alg, sum, have)
	}
	return nil
}

// Checksums hashes data with every algorithm a sidecar can name: for
// generated documents, whose sidecars must be hashes of the exact bytes
// served.
func Checksums(data []byte) blob.Checksums {
	sum := func(h hash.Hash) string { h.Write(data); return hex.EncodeToString(h.Sum(nil)) }
	return blob.Checksums{MD5: sum(md5.New()), SHA1: sum(sha1.New()), SHA256: sum(sha256.New()), SHA512: sum(sha512.New())}
}
