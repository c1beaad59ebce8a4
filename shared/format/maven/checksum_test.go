package maven

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

func TestSidecar(t *testing.T) {
	data := []byte("hello maven\n")
	sums := Checksums(data)
	for _, alg := range checksumAlgs {
		want := Stored(alg, sums)
		if len(want) != hexLen[alg] {
			t.Fatalf("%s: %q", alg, want)
		}
		for _, body := range []string{want, want + "\n", strings.ToUpper(want), "  " + want + "  demo-1.0.jar\n"} {
			got, err := ParseSidecar(alg, []byte(body))
			if err != nil || got != want {
				t.Errorf("ParseSidecar(%s, %q) = %q, %v", alg, body, got, err)
			}
			if err := VerifySidecar(alg, []byte(body), sums); err != nil {
				t.Errorf("VerifySidecar(%s, %q): %v", alg, body, err)
			}
		}
		other := Stored(alg, Checksums([]byte("other")))
		if err := VerifySidecar(alg, []byte(other), sums); err == nil || !strings.Contains(err.Error(), "does not match") {
			t.Errorf("%s: mismatch accepted: %v", alg, err)
		}
	}
	for _, body := range []string{"", "   ", "xyz", strings.Repeat("g", 40), strings.Repeat("a", 39), strings.Repeat("a", 41),
		strings.Repeat("a", MaxSidecar+1)} {
		if _, err := ParseSidecar("sha1", []byte(body)); err == nil {
			t.Errorf("ParseSidecar(sha1, %q) accepted", body)
		}
	}
	if _, err := ParseSidecar("crc32", []byte("abcd")); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

func FuzzSidecar(f *testing.F) {
	sums := Checksums([]byte("stored file"))
	f.Add("sha1", []byte(sums.SHA1))
	f.Add("md5", []byte(sums.MD5+"  file.jar\n"))
	f.Add("sha512", []byte(strings.ToUpper(sums.SHA512)))
	f.Add("sha256", []byte("zz"))
	f.Fuzz(func(t *testing.T, alg string, body []byte) {
		got, err := ParseSidecar(alg, body)
		if err != nil {
			return
		}
		// Accepted: lowercase hex of the algorithm's length, taken from the body.
		if len(got) != hexLen[alg] || strings.ToLower(got) != got || !strings.Contains(strings.ToLower(string(body)), got) {
			t.Fatalf("ParseSidecar(%q, %q) = %q", alg, body, got)
		}
		// Verification agrees with a plain comparison.
		err = VerifySidecar(alg, body, sums)
		if (err == nil) != (got == Stored(alg, sums)) {
			t.Fatalf("VerifySidecar(%q, %q) = %v", alg, body, err)
		}
		if err := VerifySidecar(alg, body, blob.Checksums{}); err != nil {
			t.Fatalf("nothing stored yet, still refused: %v", err)
		}
	})
}
