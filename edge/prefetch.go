package edge

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/meta"
)

// prefetchParallel bounds the blobs fetched at once ahead of demand.
const prefetchParallel = 4

// What a node fetches ahead of demand (--prefetch): every blob of its
// repositories, none, or those of the repositories it names.
const (
	PrefetchAll  = "all"
	PrefetchNone = "none"
)

// prefetcher pins the blobs of the repositories it prefetches and fetches
// those not cached yet, each time a heartbeat brings the assignment. A
// pass after one that left nothing missing, with the same repositories
// caught up on, looks only at the blobs referenced since
// (meta.Tx.ReferencedSince),
// adding their pins; blobs no longer referenced stay pinned until the
// next whole pass (a change of the assignment, or a restart).
type prefetcher struct {
	replica  *meta.Store
	cache    *cache.Cache
	log      *slog.Logger
	only     []string      // repository names (empty: all); nil with none
	none     bool          // fetch nothing ahead of demand
	assigned chan []string // the latest assignment, taken when the prefetcher is free
	missing  atomic.Int64  // blobs of the prefetched repositories not cached yet

	lastRepos []string
	lastIndex uint64
}

// newPrefetcher prefetches as setting says: PrefetchAll, PrefetchNone,
// or comma-separated repository names.
func newPrefetcher(replica *meta.Store, c *cache.Cache, log *slog.Logger, setting string) *prefetcher {
	p := &prefetcher{replica: replica, cache: c, log: log, assigned: make(chan []string, 1)}
	switch setting {
	case "", PrefetchAll:
	case PrefetchNone:
		p.none = true
	default:
		for _, name := range strings.Split(setting, ",") {
			if name = strings.TrimSpace(name); name != "" {
				p.only = append(p.only, name)
			}
		}
	}
	return p
}

// offer hands the prefetcher the latest assignment, replacing one it has
// not taken yet.
func (p *prefetcher) offer(repos []string) {
	select {
	case <-p.assigned:
	default:
	}
	p.assigned <- repos
}

func (p *prefetcher) run(ctx context.Context) {
	for {
		var repos []string
		select {
		case <-ctx.Done():
			return
		case repos = <-p.assigned:
		}
		p.pass(ctx, repos)
	}
}

// pass pins and fetches the blobs of the assigned repositories (ids) it
// prefetches, once the replica has caught up on them.
func (p *prefetcher) pass(ctx context.Context, repos []string) {
	if p.none {
		return
	}
	index := p.replica.LastApplied()
	followed, err := p.replica.Followed()
	if err != nil {
		p.log.Warn("listing the blobs to prefetch", "err", err)
		return
	}
	var chosen []string // sorted, as followed is
	err = p.replica.View(func(tx *meta.Tx) error {
		for _, id := range followed {
			if !slices.Contains(repos, id) {
				continue
			}
			if r, err := tx.Repo(id); err == nil && (len(p.only) == 0 || slices.Contains(p.only, r.Name)) {
				chosen = append(chosen, id)
			}
		}
		return nil
	})
	if err != nil {
		p.log.Warn("listing the blobs to prefetch", "err", err)
		return
	}
	// The same repositories as a pass that left nothing missing: only what
	// was referenced since, if anything.
	same := slices.Equal(chosen, p.lastRepos) && p.missing.Load() == 0 && p.lastIndex > 0
	if same && index == p.lastIndex {
		return
	}
	var digests []string
	err = p.replica.View(func(tx *meta.Tx) error {
		if same {
			since, _ := tx.ReferencedSince(p.lastIndex, 1<<30)
			for _, d := range since {
				if slices.ContainsFunc(tx.BlobRepos(d), func(id string) bool { _, ok := slices.BinarySearch(chosen, id); return ok }) {
					digests = append(digests, d)
				}
			}
			return nil
		}
		for _, id := range chosen {
			ds, err := tx.RepoBlobs(id)
			if err != nil {
				return err
			}
			digests = append(digests, ds...)
		}
		return nil
	})
	if err != nil {
		p.log.Warn("listing the blobs to prefetch", "err", err)
		return
	}
	if same {
		p.cache.PinMore(digests)
	} else {
		p.cache.Pin(digests)
	}
	missing := p.cache.Prefetch(ctx, digests, prefetchParallel)
	p.missing.Store(int64(missing))
	p.lastRepos, p.lastIndex = chosen, index
	if missing > 0 && ctx.Err() == nil {
		p.log.Warn("blobs of assigned repositories not cached yet; trying again at the next heartbeat", "missing", missing)
	}
}
