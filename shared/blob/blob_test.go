package blob_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

const (
	hex64  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	hex128 = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
)

func TestParseDigest(t *testing.T) {
	valid := []struct{ in, algo, hex string }{
		{"sha256:" + hex64, "sha256", hex64},
		{"sha512:" + hex128, "sha512", hex128},
	}
	for _, tc := range valid {
		algo, hx, err := blob.ParseDigest(tc.in)
		if err != nil || algo != tc.algo || hx != tc.hex {
			t.Errorf("ParseDigest(%q) = %q, %q, %v", tc.in, algo, hx, err)
		}
	}
	invalid := []string{
		"", ":", "sha256", "sha256:", hex64, ":" + hex64,
		"sha256:" + strings.ToUpper(hex64),
		"sha256:" + hex64[:63], "sha256:" + hex64 + "0",
		"sha256:" + hex128, "sha512:" + hex64,
		"sha256:" + hex64[:62] + "/.",
		"sha256:../../etc/passwd", "../../etc/passwd",
		"md5:d41d8cd98f00b204e9800998ecf8427e",
		"SHA256:" + hex64, "sha256:" + hex64 + "\n",
		"sha256::" + hex64[1:],
	}
	for _, in := range invalid {
		if _, _, err := blob.ParseDigest(in); !errors.Is(err, blob.ErrInvalidDigest) {
			t.Errorf("ParseDigest(%q): err = %v, want ErrInvalidDigest", in, err)
		}
	}
}

func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{
		"sha256:" + hex64, "sha512:" + hex128, "sha256:xyz", "../../etc/passwd",
		"sha256:" + strings.ToUpper(hex64), "md5:d41d8cd98f00b204e9800998ecf8427e", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		algo, hx, err := blob.ParseDigest(d)
		if err != nil {
			if !errors.Is(err, blob.ErrInvalidDigest) {
				t.Fatalf("ParseDigest(%q): err = %v, want ErrInvalidDigest", d, err)
			}
			if algo != "" || hx != "" {
				t.Fatalf("ParseDigest(%q) returned %q, %q with an error", d, algo, hx)
			}
			return
		}
		if algo+":"+hx != d {
			t.Fatalf("ParseDigest(%q) = %q, %q; does not round-trip", d, algo, hx)
		}
		if strings.ContainsAny(d, "/.\\") {
			t.Fatalf("ParseDigest accepted %q, which contains a path separator or dot", d)
		}
		want := map[string]int{"sha256": 64, "sha512": 128}[algo]
		if want == 0 || len(hx) != want {
			t.Fatalf("ParseDigest(%q) = %q with %d hex chars", d, algo, len(hx))
		}
		if strings.Trim(hx, "0123456789abcdef") != "" {
			t.Fatalf("ParseDigest(%q) accepted non-lowercase-hex %q", d, hx)
		}
	})
}

// TestNoSpace: a full disk or quota, however deeply wrapped, becomes
// ErrNoSpace with the cause kept; other errors are left alone.
func TestNoSpace(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		cause := fmt.Errorf("writing: %w", &os.PathError{Op: "write", Path: "f", Err: errno})
		err := blob.NoSpace(cause)
		if !errors.Is(err, blob.ErrNoSpace) || !errors.Is(err, errno) || !blob.DiskFull(err) {
			t.Errorf("NoSpace(%v) = %v", cause, err)
		}
		if again := blob.NoSpace(err); again != err {
			t.Errorf("NoSpace is not idempotent: %v", again)
		}
	}
	other := errors.New("permission denied")
	if err := blob.NoSpace(other); err != other {
		t.Errorf("NoSpace(other) = %v", err)
	}
	if blob.NoSpace(nil) != nil {
		t.Error("NoSpace(nil) != nil")
	}
}
