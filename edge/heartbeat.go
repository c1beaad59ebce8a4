package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/version"
)

// heartbeat reports the node to an origin every period and acts on the
// answer: the replica follows the assignment, the prefetcher and the
// shipper learn what the origins want, the client learns the cluster's
// origins. It knows when an origin last answered, for health.
type heartbeat struct {
	client   *protocol.Client
	follower *feed.Follower
	cache    *cache.Cache
	ship     *shipper
	prefetch *prefetcher
	every    time.Duration
	log      *slog.Logger
	out      io.Writer

	lastContact atomic.Int64  // unix nanos of the last heartbeat an origin answered
	originIndex atomic.Uint64 // the origin's applied index then
	lag         lagMark
	failures    atomic.Int64
	named       sync.Once     // the assigned repositories are logged once
	reached     chan struct{} // an origin answered after failures: the feed retries now
}

func (h *heartbeat) run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	failing := false
	var refusedLogged time.Time
	for {
		switch err := h.beat(ctx); {
		case err != nil && errors.Is(err, protocol.ErrRefused):
			// The credential, not the network: the same answer every
			// time, said loudly but once a minute.
			failing = true
			h.failures.Add(1)
			if time.Since(refusedLogged) >= time.Minute {
				refusedLogged = time.Now()
				h.log.Error("the origins refuse this edge node's heartbeat; it serves what it has replicated. Check --node-id and DEPOT_NODE_TOKEN "+
					"against the node's registration (POST /api/v1/edge-nodes), and that it was not deleted", "err", err)
			}
		case err != nil && ctx.Err() == nil:
			failing = true
			h.failures.Add(1)
			h.log.Warn("heartbeat failed", "err", err)
		case err == nil && failing:
			failing = false
			select { // the feed, waiting to retry, goes now
			case h.reached <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	replica := h.follower.Store
	served, ids := h.ship.counted(), h.ship.seen.Take(protocol.MaxSeen)
	a, err := h.client.Heartbeat(ctx, protocol.Report{AppliedIndex: replica.LastApplied(), CachedBytes: h.cache.Stats().Bytes,
		MissingBlobs: h.prefetch.missing.Load(), Version: version.Version, Downloads: served, Sync: h.prefetch.sync(), Seen: ids})
	if err != nil {
		h.ship.uncount(served) // reported with the next heartbeat that goes through
		h.ship.seen.Return(ids)
		return err
	}
	h.lastContact.Store(time.Now().UnixNano())
	h.originIndex.Store(a.OriginIndex)
	h.ship.want(a)
	if len(a.Origins) > 0 {
		h.client.SetOrigins(a.Origins) // the cluster's origins, for when the given ones are away
	}
	h.lag.observe(a.OriginIndex, replica.LastApplied(), time.Now())
	if err := h.follower.Reconcile(ctx, a.RepositoryIDs); err != nil {
		return err
	}
	h.named.Do(func() {
		names := repoNames(replica, a.RepositoryIDs)
		fmt.Fprintf(h.out, "  serving repositories: %s\n", strings.Join(names, ", "))
		h.log.Info("serving repositories", "repositories", names)
	})
	h.prefetch.offer(a.RepositoryIDs)
	return nil
}

// unreachable says whether no origin answered the last three heartbeats.
func (h *heartbeat) unreachable(now time.Time) bool {
	last := h.lastContact.Load()
	return last == 0 || now.Sub(time.Unix(0, last)) > 3*h.every
}

func repoNames(replica *meta.Store, ids []string) []string {
	var names []string
	_ = replica.View(func(tx *meta.Tx) error {
		for _, id := range ids {
			if r, err := tx.Repo(id); err == nil {
				names = append(names, r.Name)
			}
		}
		return nil
	})
	return names
}
