// Package metrics holds Depot's Prometheus collectors, named
// depot_<subsystem>_<name>_<unit>, in a registry owned by each process.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// HTTP are the request metrics of one server.
type HTTP struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	Bytes    *prometheus.CounterVec
}

// Metrics is the set of collectors of one process.
type Metrics struct {
	Registry *prometheus.Registry
	HTTP     HTTP
	Uploads  *prometheus.CounterVec
	// AuthFailures counts failed credential checks by reason
	// (bad_credentials, throttled, busy, unverifiable).
	AuthFailures *prometheus.CounterVec
	GC           GC
	Events       Events
	Raft         Raft
	Search       Search
	Retention    Retention
}

// Retention are the retention rules' metrics (reported where they run).
type Retention struct {
	// Runs counts runs that deleted (not dry runs), by outcome (ok, error).
	Runs *prometheus.CounterVec
	// Deleted counts the versions, files and bytes runs deleted.
	Versions, Files, Bytes prometheus.Counter
	LastSuccess            prometheus.Gauge
}

// Search are the search indexer's metrics (reported by the leader).
type Search struct {
	// Inspected counts artifacts the indexer read, by outcome (ok,
	// failed: the file could not be inspected; none: its format says
	// nothing search uses).
	Inspected *prometheus.CounterVec
	// Behind is how many log indexes the indexer has yet to read.
	Behind prometheus.Gauge
}

// Raft are the metadata log's metrics (an origin's); its leader, term
// and indexes are gauges the origin registers over its raft node.
type Raft struct {
	// Apply is how long applying a command took, by command type.
	Apply *prometheus.HistogramVec
	// LeaderChanges counts the leaders this node has seen come and go.
	LeaderChanges prometheus.Counter
	// Snapshot is how long writing a snapshot of the store took.
	Snapshot prometheus.Histogram
}

// Events are the event log's and webhook deliveries' metrics.
type Events struct {
	// Dropped counts events that were never recorded or never offered to
	// the webhooks, by reason (queue_full: a node's download batch queue
	// was full; expired: older than the give-up time when the webhook got
	// to them; trimmed: the log was trimmed before the webhook read them).
	Dropped *prometheus.CounterVec
	// Attempts counts delivery attempts by outcome (success, failure).
	Attempts *prometheus.CounterVec
	// Pending is the number of pending deliveries (on the leader).
	Pending prometheus.Gauge
}

// GC are the garbage collector's metrics.
type GC struct {
	// Runs counts collections by outcome (ok, error).
	Runs *prometheus.CounterVec
	// Removed and RemovedBytes count what collections removed, by kind
	// (blob, upload, temp).
	Removed      *prometheus.CounterVec
	RemovedBytes *prometheus.CounterVec
	Duration     prometheus.Histogram
	LastSuccess  prometheus.Gauge
}

// New registers the collectors in a fresh registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		HTTP: HTTP{
			Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_http_requests_total", Help: "HTTP requests by area (api, format name), method and status code.",
			}, []string{"area", "method", "code"}),
			Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name: "depot_http_request_duration_seconds", Help: "HTTP request latency by area.",
				Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
			}, []string{"area", "method"}),
			Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_http_response_bytes_total", Help: "Response body bytes by area.",
			}, []string{"area"}),
		},
		Uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "depot_artifacts_uploaded_total", Help: "Artifacts uploaded through this origin (each an artifact.uploaded event), by format.",
		}, []string{"format"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "depot_auth_failures_total", Help: "Failed credential checks, by reason.",
		}, []string{"reason"}),
		GC: GC{
			Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_gc_runs_total", Help: "Garbage collections, by outcome (ok, error).",
			}, []string{"outcome"}),
			Removed: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_gc_removed_total", Help: "Items garbage collection removed, by kind (blob, upload, temp).",
			}, []string{"kind"}),
			RemovedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_gc_removed_bytes_total", Help: "Bytes garbage collection freed, by kind (blob, upload, temp).",
			}, []string{"kind"}),
			Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name: "depot_gc_duration_seconds", Help: "Duration of garbage collections.",
				Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
			}),
			LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "depot_gc_last_success_timestamp_seconds", Help: "When the last successful garbage collection ended (unix time).",
			}),
		},
		Events: Events{
			Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_events_dropped_total", Help: "Events never recorded or never offered to webhooks, by reason (queue_full, expired, trimmed).",
			}, []string{"reason"}),
			Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_webhook_delivery_attempts_total", Help: "Webhook delivery attempts, by outcome (success, failure).",
			}, []string{"outcome"}),
			Pending: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "depot_webhook_deliveries_pending", Help: "Webhook deliveries waiting for an attempt (reported by the leader).",
			}),
		},
		Retention: Retention{
			Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_retention_runs_total", Help: "Runs of the retention rules that deleted (dry runs aside), by outcome (ok, error).",
			}, []string{"outcome"}),
			Versions: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "depot_retention_deleted_versions_total", Help: "Package versions the retention rules deleted.",
			}),
			Files: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "depot_retention_deleted_files_total", Help: "Files the retention rules deleted, with their versions.",
			}),
			Bytes: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "depot_retention_deleted_bytes_total", Help: "Bytes of the files the retention rules deleted (freed by the next garbage collection).",
			}),
			LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "depot_retention_last_success_timestamp_seconds", Help: "When a run of the retention rules last ended without error.",
			}),
		},
		Search: Search{
			Inspected: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "depot_search_inspected_total", Help: "Artifacts the search indexer read, by outcome (ok, failed, none).",
			}, []string{"outcome"}),
			Behind: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "depot_search_index_behind", Help: "Log indexes the search indexer has yet to read (reported by the leader).",
			}),
		},
		Raft: Raft{
			Apply: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name: "depot_raft_apply_duration_seconds", Help: "Time to apply a committed command to the store, by command type.",
				Buckets: prometheus.ExponentialBuckets(0.00005, 3, 12),
			}, []string{"command"}),
			LeaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "depot_raft_leader_changes_total", Help: "Leader changes this origin has seen.",
			}),
			Snapshot: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name: "depot_raft_snapshot_duration_seconds", Help: "Time to write a snapshot of the metadata store.",
				Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
			}),
		},
	}
	reg.MustRegister(m.HTTP.Requests, m.HTTP.Duration, m.HTTP.Bytes, m.Uploads, m.AuthFailures,
		m.GC.Runs, m.GC.Removed, m.GC.RemovedBytes, m.GC.Duration, m.GC.LastSuccess,
		m.Events.Dropped, m.Events.Attempts, m.Events.Pending, m.Raft.Apply, m.Raft.LeaderChanges, m.Raft.Snapshot,
		m.Search.Inspected, m.Search.Behind,
		m.Retention.Runs, m.Retention.Versions, m.Retention.Files, m.Retention.Bytes, m.Retention.LastSuccess,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every known label value starts at 0, so a series exists (and rate()
	// and alerts on it work) before its first event.
	for vec, values := range map[*prometheus.CounterVec][]string{
		m.AuthFailures: {"bad_credentials", "throttled", "busy", "unverifiable"},
		m.GC.Runs:      {"ok", "error"}, m.GC.Removed: {"blob", "upload", "temp"}, m.GC.RemovedBytes: {"blob", "upload", "temp"},
		m.Events.Dropped: {"queue_full", "expired", "trimmed"}, m.Events.Attempts: {"success", "failure"},
		m.Search.Inspected: {"ok", "failed", "none"}, m.Retention.Runs: {"ok", "error"},
	} {
		for _, v := range values {
			vec.WithLabelValues(v)
		}
	}
	return m
}
