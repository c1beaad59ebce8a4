package nuget

import (
	"cmp"
	"testing"
)

// TestVersionOrder: versions order as NuGet orders them (SemVer 2), which
// string order does not: the v2 feed's latest versions depend on it.
func TestVersionOrder(t *testing.T) {
	order := []string{"1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.0.1.1", "1.2.0", "1.10.0", "10.0.0"}
	for i := range order {
		for j := range order {
			if got := compareVersions(order[i], order[j]); got != cmp.Compare(i, j) {
				t.Errorf("compareVersions(%s, %s) = %d", order[i], order[j], got)
			}
		}
	}
	if compareVersions("1.0.0-Beta", "1.0.0-beta") != 0 {
		t.Error("prerelease labels compare with regard to case")
	}
}
