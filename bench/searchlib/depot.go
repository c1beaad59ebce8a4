package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/search"
	bolt "go.etcd.io/bbolt"
)

// buildDepot fills a meta store at path through commands, as an origin's
// state machine applies them: the repositories, then one ArtifactsApply
// a batch and, after a batch with npm packages, the PackageInfoPut the
// origin's indexer would commit for them.
func buildDepot(path string, g *generator, sm *samples) (*meta.Store, error) {
	st, err := meta.Open(path)
	if err != nil {
		return nil, err
	}
	var idx, cursor uint64
	apply := func(c meta.Command) error {
		idx++
		if err := st.Apply(idx, c); err != nil {
			return fmt.Errorf("%T at %d: %w", c, idx, err)
		}
		return nil
	}
	for _, p := range g.repos {
		r := meta.Repository{ID: p.ID, Name: p.Name, Format: p.Format, Description: "bench " + p.Format + " repository",
			Public: p.Public, CreatedBy: "admin", CreatedAt: g.t0, UpdatedAt: g.t0}
		if err := apply(&meta.RepoCreate{Repo: r}); err != nil {
			st.Close()
			return nil, err
		}
	}
	done := 0
	err = g.each(sm, func(b *batch) error {
		if err := apply(&meta.ArtifactsApply{RepoID: b.Repo.ID, Put: b.Put}); err != nil {
			return err
		}
		if len(b.Infos) > 0 {
			// The indexer has read the feed up to the artifacts' command.
			to := idx
			if err := apply(&meta.PackageInfoPut{From: cursor, To: to, Infos: b.Infos}); err != nil {
				return err
			}
			cursor = to
		}
		done += len(b.Put)
		progress("depot", done, g.artifacts)
		return nil
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// bucketSize is what one top-level bbolt bucket takes: its pages, and the
// bytes of them in use.
type bucketSize struct {
	Name         string
	Pages, InUse int64
	Keys         int
}

// bucketSizes reads the page statistics of every top-level bucket of a
// closed bbolt file (a walk of every page: seconds at a million records).
func bucketSizes(path string) ([]bucketSize, int, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	var out []bucketSize
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			pages := int64(s.BranchPageN + s.BranchOverflowN + s.LeafPageN + s.LeafOverflowN)
			out = append(out, bucketSize{Name: string(name), Pages: pages * int64(db.Info().PageSize),
				InUse: int64(s.BranchInuse + s.LeafInuse + s.InlineBucketInuse), Keys: s.KeyN})
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pages > out[j].Pages })
	return out, db.Info().PageSize, err
}

// searchBuckets are the buckets that exist for search alone: what growing
// the trigram index means keeping.
var searchBuckets = map[string]bool{"pkg_names": true, "pkg_grams": true, "gram_counts": true, "file_names": true,
	"pkg_terms": true, "artifact_checksums": true}

// depotEngine answers the measured questions from Depot's store, each in
// its own read transaction, narrowed to readable as the API narrows them.
type depotEngine struct{ st *meta.Store }

func (d depotEngine) view(fn func(tx *meta.Tx) int) int {
	n := 0
	_ = d.st.View(func(tx *meta.Tx) error { n = fn(tx); return nil })
	return n
}

func (d depotEngine) quick(readable []string, q string) int {
	return d.view(func(tx *meta.Tx) int { return len(search.Quick(tx, readable, q, limit)) })
}

func (d depotEngine) suggest(readable []string, q string) int {
	return d.view(func(tx *meta.Tx) int { return len(search.Suggest(tx, readable, q, limit)) })
}

func (d depotEngine) checksum(readable []string, hex string) int {
	return d.view(func(tx *meta.Tx) int { return len(search.Checksum(tx, readable, "sha256", hex, limit)) })
}

// The single-index questions: the first limit readable entries of one
// index, as the search package's tiers read them (it builds the readable
// set once a search, so these do too).

func readableSet(readable []string) map[string]bool {
	m := make(map[string]bool, len(readable))
	for _, id := range readable {
		m[id] = true
	}
	return m
}

func (d depotEngine) names(readable []string, q string, exact bool) int {
	return d.view(func(tx *meta.Tx) int {
		r, n := readableSet(readable), 0
		tx.PackagesByName(q, exact, func(repo, _ string) bool {
			if r[repo] {
				n++
			}
			return n < limit
		})
		return n
	})
}

func (d depotEngine) containing(readable []string, q string) int {
	return d.view(func(tx *meta.Tx) int {
		r, n := readableSet(readable), 0
		tx.PackagesContaining(q, func(repo, _ string) bool {
			if r[repo] {
				n++
			}
			return n < limit
		})
		return n
	})
}

func (d depotEngine) terms(readable []string, q string, exact bool) int {
	return d.view(func(tx *meta.Tx) int {
		r, n := readableSet(readable), 0
		tx.PackagesByTerm(q, exact, func(_, repo, _ string) bool {
			if r[repo] {
				n++
			}
			return n < limit
		})
		return n
	})
}

func (d depotEngine) files(readable []string, q string, exact bool) int {
	return d.view(func(tx *meta.Tx) int {
		r, n := readableSet(readable), 0
		tx.FilesByName(q, exact, func(repo, _, _ string) bool {
			if r[repo] {
				n++
			}
			return n < limit
		})
		return n
	})
}
