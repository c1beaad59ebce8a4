package conda

import (
	"bytes"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.10.0", "1.9.0", 1}, {"1.0", "1.0.0", -1}, {"2.0.0", "2.0.0", 0}, {"1.0a", "1.0b", -1}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func FuzzReadIndex(f *testing.F) {
	f.Add([]byte("BZh91AY&SY"), false)
	f.Add([]byte("PK\x03\x04"), true)
	f.Fuzz(func(t *testing.T, pkg []byte, isConda bool) {
		_, _ = readIndex(bytes.NewReader(pkg), int64(len(pkg)), isConda)
	})
}
