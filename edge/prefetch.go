package edge

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/meta"
)

// prefetchParallel bounds the blobs fetched at once ahead of demand.
const prefetchParallel = 4

// prefetcher pins the blobs of the assigned repositories and fetches
// those not cached yet, each time a heartbeat brings the assignment.
type prefetcher struct {
	replica  *meta.Store
	cache    *cache.Cache
	log      *slog.Logger
	assigned chan []string // the latest assignment, taken when the prefetcher is free
	missing  atomic.Int64  // blobs of the assigned repositories not cached yet
}

func newPrefetcher(replica *meta.Store, c *cache.Cache, log *slog.Logger) *prefetcher {
	return &prefetcher{replica: replica, cache: c, log: log, assigned: make(chan []string, 1)}
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
	var lastRepos []string
	var lastIndex uint64
	for {
		var repos []string
		select {
		case <-ctx.Done():
			return
		case repos = <-p.assigned:
		}
		// Nothing changed since a pass that left nothing missing.
		index := p.replica.LastApplied()
		if index == lastIndex && slices.Equal(repos, lastRepos) && p.missing.Load() == 0 {
			continue
		}
		lastRepos, lastIndex = repos, index
		var digests []string
		err := p.replica.View(func(tx *meta.Tx) error {
			for _, id := range repos {
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
			continue
		}
		p.cache.Pin(digests)
		missing := p.cache.Prefetch(ctx, digests, prefetchParallel)
		p.missing.Store(int64(missing))
		if missing > 0 && ctx.Err() == nil {
			p.log.Warn("blobs of assigned repositories not cached yet; trying again at the next heartbeat", "missing", missing)
		}
	}
}
