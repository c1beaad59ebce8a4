// Package stat summarises the benchmarks' measurements.
package stat

import (
	"slices"
	"time"
)

// Percentile is the p-th percentile of d by nearest rank (p 100: the
// largest; 0 for none).
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(i-1, len(s)-1))]
}
