package format

import "testing"

func TestCompareDotted(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.10.0", "1.9.0", 1}, {"1.0", "1.0.0", 0}, {"2.0.0", "2.0.1", -1}, {"1.0a", "1.0b", -1}, {"1.0.rc1", "1.0.0", 1}} {
		if got := CompareDotted(c.a, c.b); got != c.want {
			t.Errorf("CompareDotted(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
