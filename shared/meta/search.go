package meta

import (
	"bytes"
	"maps"
	"slices"
	"strings"
)

// Package names are indexed by their trigrams (of the lower-case name), so
// a substring search reads the names that share the query's rarest
// trigram instead of every name of every repository. Shorter queries scan.

const gramLen = 3

// grams lists the distinct trigrams of a lower-case string.
func grams(s string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i+gramLen <= len(s); i++ {
		if g := s[i : i+gramLen]; !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// indexGrams adds (or removes) the package name of a repository to the
// trigram index, keeping each trigram's count.
func (tx *Tx) indexGrams(repoID, name string, add bool) error {
	counts := tx.bucket(bGramCounts)
	for _, g := range grams(lower(name)) {
		k := []byte(key(g, name, repoID))
		n := getU64(counts.Get([]byte(g)))
		var err error
		switch {
		case add:
			if err = tx.bucket(bPkgGrams).Put(k, []byte{}); err == nil {
				err = counts.Put([]byte(g), u64(n+1))
			}
		case n <= 1:
			if err = tx.bucket(bPkgGrams).Delete(k); err == nil {
				err = counts.Delete([]byte(g))
			}
		default:
			if err = tx.bucket(bPkgGrams).Delete(k); err == nil {
				err = counts.Put([]byte(g), u64(n-1))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// searchGrams is searchPackages for a query of at least gramLen bytes,
// over PackagesContaining: the matches come in (name, repository) order,
// so they need no sort.
func (tx *Tx) searchGrams(repos []string, q string, want func(int) bool) ([]PackageSummary, int, error) {
	readable := make(map[string]bool, len(repos))
	for _, id := range repos {
		readable[id] = true
	}
	out := []PackageSummary{}
	total := 0
	var err error
	tx.PackagesContaining(q, func(repo, name string) bool {
		if !readable[repo] {
			return true
		}
		if want(total) {
			var s PackageSummary
			if s, err = tx.packageSummary(repo, name); err != nil {
				return false
			}
			out = append(out, s)
		}
		total++
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// PackagesContaining visits the packages whose lower-case name contains
// q (lower case, at least three bytes), in (name, repository) order, by
// the names holding q's rarest trigram; fn returning false stops.
func (tx *Tx) PackagesContaining(q string, fn func(repoID, name string) bool) {
	if len(q) < gramLen {
		return
	}
	rarest, least := "", uint64(0)
	for i, g := range grams(q) {
		n := getU64(tx.bucket(bGramCounts).Get([]byte(g)))
		if i == 0 || n < least {
			rarest, least = g, n
		}
	}
	if least == 0 {
		return
	}
	p := []byte(key(rarest, ""))
	cur := tx.bucket(bPkgGrams).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		name, repo, _ := strings.Cut(string(k[len(p):]), "\x00")
		if strings.Contains(lower(name), q) && !fn(repo, name) {
			return
		}
	}
}

// buildPkgGrams fills the trigram index from the package summaries.
func buildPkgGrams(tx *Tx) error {
	// What indexGrams adds for each package, put in key order.
	var keys [][]byte
	counts := map[string]uint64{}
	cur := tx.bucket(bPackages).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		repo, name, _ := strings.Cut(string(k), "\x00")
		for _, g := range grams(lower(name)) {
			keys = append(keys, []byte(key(g, name, repo)))
			counts[g]++
		}
	}
	if err := putInOrder(tx.bucket(bPkgGrams), keys); err != nil {
		return err
	}
	for _, g := range slices.Sorted(maps.Keys(counts)) {
		if err := tx.bucket(bGramCounts).Put([]byte(g), u64(counts[g])); err != nil {
			return err
		}
	}
	return nil
}
