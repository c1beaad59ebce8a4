package vuln_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/depot-registry/depot/shared/vuln"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// tree is a project's worth of packages to match: n (ecosystem, name,
// version) triples taken from the advisory data itself (so many match),
// the ecosystems in turn, each at the last version a range names.
func tree(advs []vuln.Advisory, n int) [][3]string {
	byEco := map[string][][3]string{}
	var ecos []string
	for _, a := range advs {
		for _, af := range a.Affected {
			v := "1.0.0"
			if len(af.Versions) > 0 {
				v = af.Versions[0]
			}
			for _, r := range af.Ranges {
				for _, e := range r.Events {
					if e.Fixed != "" {
						v = e.Fixed
					}
				}
			}
			eco := af.Package.Ecosystem
			if _, ok := byEco[eco]; !ok {
				ecos = append(ecos, eco)
			}
			byEco[eco] = append(byEco[eco], [3]string{eco, af.Package.Name, v})
		}
	}
	var out [][3]string
	for i := 0; len(out) < n; i++ {
		for _, eco := range ecos {
			if l := byEco[eco]; len(out) < n {
				out = append(out, l[i%len(l)])
			}
		}
	}
	return out
}

// BenchmarkBuild is reading the database into memory: the 10,471 records
// parsed, then indexed (what an origin does once per change); its
// heap is reported as MiB/db.
func BenchmarkBuild(b *testing.B) {
	recs := vulntest.Records(b)
	for b.Loop() {
		var advs []vuln.Advisory
		for _, raw := range recs {
			a, err := vuln.Parse(raw)
			if err != nil {
				b.Fatal(err)
			}
			advs = append(advs, a)
		}
		_ = vuln.Build(advs)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	advs := vulntest.Advisories(b)
	db := vuln.Build(advs)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/db")
	runtime.KeepAlive(db)
}

// BenchmarkScan1000 is matching a tree of 1,000 packages (a large
// lockfile's worth) against the database, every one of them named by
// advisories (the worst case: each is matched against all of its
// package's records).
func BenchmarkScan1000(b *testing.B) {
	advs := vulntest.Advisories(b)
	db := vuln.Build(advs)
	pkgs := tree(advs, 1000)
	found := 0
	for b.Loop() {
		found = 0
		for _, p := range pkgs {
			f, _ := db.Match(p[0], p[1], p[2])
			found += len(f)
		}
	}
	b.ReportMetric(float64(found), "findings")
}

// BenchmarkScan1000Typical is a tree as projects have them: 1,000
// packages of which 50 are named by advisories (at a fixed version, as
// most installed versions are), the rest by none.
func BenchmarkScan1000Typical(b *testing.B) {
	advs := vulntest.Advisories(b)
	db := vuln.Build(advs)
	pkgs := tree(advs, 50)
	for i := range 950 {
		pkgs = append(pkgs, [3]string{vuln.NPM, fmt.Sprintf("unadvised-package-%d", i), "1.0.0"})
	}
	found := 0
	for b.Loop() {
		found = 0
		for _, p := range pkgs {
			f, _ := db.Match(p[0], p[1], p[2])
			found += len(f)
		}
	}
	b.ReportMetric(float64(found), "findings")
}
