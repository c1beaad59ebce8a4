package edge

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/progress"
)

const (
	prefetchParallel   = 4                // blobs fetched at once ahead of demand
	prefetchPage       = 1000             // blobs referenced since the last pass, looked at together
	prefetchWholeEvery = 10 * time.Minute // see prefetcher
)

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
// (meta.Tx.ReferencedSince), adding their pins; blobs no longer referenced
// stay pinned until the next whole pass, which comes with a change of the
// assignment, a restart, or prefetchWholeEvery after the last.
type prefetcher struct {
	replica  *meta.Store
	cache    *cache.Cache
	log      *slog.Logger
	only     []string      // repository names (empty: all); nil with none
	none     bool          // fetch nothing ahead of demand
	assigned chan []string // the latest assignment, taken when the prefetcher is free
	missing  atomic.Int64  // blobs of the prefetched repositories not cached yet
	progress *progress.Tracker

	wholeEvery time.Duration
	lastRepos  []string
	lastIndex  uint64
	lastWhole  time.Time // of the last whole pass
}

// newPrefetcher prefetches as setting says: PrefetchAll, PrefetchNone,
// or comma-separated repository names.
func newPrefetcher(replica *meta.Store, c *cache.Cache, log *slog.Logger, setting string) *prefetcher {
	p := &prefetcher{replica: replica, cache: c, log: log, assigned: make(chan []string, 1), wholeEvery: prefetchWholeEvery,
		progress: progress.New("prefetch", log)}
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
	// The same repositories as a recent whole pass that left nothing
	// missing: only what was referenced since, if anything.
	same := slices.Equal(chosen, p.lastRepos) && p.missing.Load() == 0 && p.lastIndex > 0 &&
		time.Since(p.lastWhole) < p.wholeEvery
	if same && index == p.lastIndex {
		return
	}
	var missing int
	p.progress.Start(0) // each Prefetch adds what it has to fetch
	if same {
		missing, err = p.since(ctx, chosen)
	} else {
		missing, err = p.whole(ctx, chosen)
	}
	p.progress.End()
	if err != nil {
		p.log.Warn("listing the blobs to prefetch", "err", err)
		return
	}
	p.missing.Store(int64(missing))
	p.lastRepos, p.lastIndex = chosen, index
	if missing > 0 && ctx.Err() == nil {
		p.log.Warn("blobs of assigned repositories not cached yet; trying again at the next heartbeat", "missing", missing)
	}
}

// whole pins exactly the blobs of the chosen repositories (unpinning
// those no longer referenced) and fetches those missing; it reports how
// many are still missing.
func (p *prefetcher) whole(ctx context.Context, chosen []string) (int, error) {
	var digests []string
	err := p.replica.View(func(tx *meta.Tx) error {
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
		return 0, err
	}
	p.cache.Pin(digests)
	p.lastWhole = time.Now()
	return p.cache.Prefetch(ctx, digests, prefetchParallel, p.progress), nil
}

// since pins and fetches, a page at a time, the blobs of the chosen
// repositories (sorted) referenced since the last pass; it reports how
// many are still missing.
func (p *prefetcher) since(ctx context.Context, chosen []string) (int, error) {
	missing := 0
	for after := p.lastIndex; ctx.Err() == nil; {
		var digests []string
		next := after
		err := p.replica.View(func(tx *meta.Tx) error {
			var since []string
			since, next = tx.ReferencedSince(after, prefetchPage)
			for _, d := range since {
				if slices.ContainsFunc(tx.BlobRepos(d), func(id string) bool { _, ok := slices.BinarySearch(chosen, id); return ok }) {
					digests = append(digests, d)
				}
			}
			return nil
		})
		if err != nil || next == after {
			return missing, err
		}
		p.cache.PinMore(digests)
		missing += p.cache.Prefetch(ctx, digests, prefetchParallel, p.progress)
		after = next
	}
	return missing, nil
}

// sync is how far the node is from holding every blob it prefetches: the
// progress of the running pass (or of the last), with what is missing.
func (p *prefetcher) sync() *progress.Sync {
	return progress.SyncOf(p.progress.Status(), p.missing.Load())
}
