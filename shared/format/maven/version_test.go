package maven

import (
	"reflect"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	ascending := []string{"1.0-alpha-1", "1.0-beta2", "1.0-rc1", "1.0-SNAPSHOT", "1.0", "1.0-sp1", "1.0-zeta", "1.0.1", "1.1", "1.9", "1.10", "2"}
	for i := range ascending {
		for j := range ascending {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := CompareVersions(ascending[i], ascending[j]); got != want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", ascending[i], ascending[j], got, want)
			}
		}
	}
	for _, eq := range [][2]string{{"1", "1.0.0"}, {"1.0-final", "1.0"}, {"1.0-GA", "1"}, {"1.0-RC1", "1.0-cr1"}, {"1.01", "1.1"}} {
		if CompareVersions(eq[0], eq[1]) != 0 {
			t.Errorf("%q != %q", eq[0], eq[1])
		}
	}
	vs := []string{"1.10", "1", "1.9", "1.0.0", "1.0-SNAPSHOT"}
	SortVersions(vs)
	if want := []string{"1.0-SNAPSHOT", "1", "1.0.0", "1.9", "1.10"}; !reflect.DeepEqual(vs, want) {
		t.Errorf("SortVersions = %v, want %v", vs, want)
	}
}

func FuzzCompareVersions(f *testing.F) {
	f.Add("1.0-SNAPSHOT", "1.0")
	f.Add("1.a1-b_2", "1-1.0.x")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 256 || len(b) > 256 {
			return
		}
		ab, ba := CompareVersions(a, b), CompareVersions(b, a)
		if ab != -ba || CompareVersions(a, a) != 0 {
			t.Fatalf("CompareVersions(%q, %q) = %d but reversed %d", a, b, ab, ba)
		}
	})
}
