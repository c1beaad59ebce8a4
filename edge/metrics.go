package edge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// metrics registers the edge's collectors, named depot_edge_*, read from
// the cache's and the replica's own figures when scraped, and returns
// the /metrics handler.
func (e *Edge) metrics() fasthttp.RequestHandler {
	counter := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	gauge := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		counter("depot_edge_cache_hits_total", "Blob reads answered from the edge's cache.", func() int64 { return e.cache.Stats().Hits }),
		counter("depot_edge_cache_misses_total", "Blob reads that needed a fetch from an origin (prefetches not counted).",
			func() int64 { return e.cache.Stats().Misses }),
		counter("depot_edge_cache_prefetches_total", "Blobs fetched from an origin ahead of demand (--prefetch).",
			func() int64 { return e.cache.Stats().Prefetches }),
		gauge("depot_edge_prefetch_running", "1 while a prefetch pass fetches blobs.", func() int64 {
			return map[bool]int64{true: 1}[e.prefetch.progress.Status().Running]
		}),
		counter("depot_edge_cache_fetched_bytes_total", "Bytes fetched from the origins and verified into the cache (misses and prefetches).",
			func() int64 { return e.cache.Stats().Fetched }),
		gauge("depot_edge_cache_bytes", "Bytes of blobs in the edge's cache.", func() int64 { return e.cache.Stats().Bytes }),
		gauge("depot_edge_cache_pinned_blobs", "Blobs kept from eviction: those of the prefetched repositories.",
			func() int64 { return int64(e.cache.Stats().Pinned) }),
		gauge("depot_edge_cache_missing_blobs", "Blobs of the assigned repositories not cached yet.", e.prefetch.missing.Load),
		gauge("depot_edge_replica_applied_index", "The last log index the replica has applied.",
			func() int64 { return int64(e.replica.LastApplied()) }),
		gauge("depot_edge_replica_lag", "Log entries the replica is behind the origin, as of the last heartbeat.", func() int64 {
			applied, origin := e.replica.LastApplied(), e.beats.originIndex.Load()
			return int64(origin - min(applied, origin))
		}),
		counter("depot_edge_heartbeat_failures_total", "Heartbeats no origin answered.", e.beats.failures.Load),
		counter("depot_edge_events_dropped_total", "Download events dropped because no origin took them for too long.", e.ship.events.dropped.Load),
		counter("depot_edge_feed_errors_total", "Failed reads of the change feed.", e.follower.Failures),
		counter("depot_edge_feed_changes_total", "Changes read from the change feed (catch-ups and resyncs included).", e.client.Changes),
		counter("depot_edge_served_bytes_total", "Bytes of blobs and documents this edge answered itself (forwarded answers not counted).", e.srv.Served),
		e.fetchSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}
