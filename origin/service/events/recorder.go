// Package events records the events that are not commands of their own,
// downloads, in batches: a download costs a channel send on its hot path,
// and the node commits what gathered once a second (or every Batch
// events) as one EventsRecord.
package events

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/meta"
	"github.com/prometheus/client_golang/prometheus"
)

// Recorder batches events into the log.
type Recorder struct {
	commit  meta.Committer
	queue   chan meta.Event
	log     *slog.Logger
	dropped prometheus.Counter
	// Every and Batch: how often, and at how many events, a batch goes.
	Every time.Duration
	Batch int

	lastWarn atomic.Int64
}

// New makes a recorder holding at most size events not yet recorded;
// beyond that, events are dropped, counted in dropped and logged.
func New(commit meta.Committer, size int, log *slog.Logger, dropped prometheus.Counter) *Recorder {
	return &Recorder{commit: commit, queue: make(chan meta.Event, max(size, 1)), log: log, dropped: dropped,
		Every: time.Second, Batch: 1000}
}

// Add queues e without waiting; it reports false when the queue was full
// and e was dropped.
func (r *Recorder) Add(e meta.Event) bool {
	select {
	case r.queue <- e:
		return true
	default:
	}
	r.dropped.Inc()
	// One warning a minute at most: a full queue drops many.
	if now := time.Now().Unix(); r.lastWarn.Load() < now-60 && r.lastWarn.Swap(now) < now-60 {
		r.log.Warn("event queue full: download events are being dropped (see depot_events_dropped_total); is there a leader?",
			"queue_size", cap(r.queue))
	}
	return false
}

// Run records batches until ctx ends, then records what is left (for a
// few seconds at most).
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	var batch []meta.Event
	for {
		select {
		case e := <-r.queue:
			batch = append(batch, e)
			if len(batch) < min(r.Batch, meta.MaxRecordedEvents) {
				continue
			}
		case <-t.C:
		case <-ctx.Done():
			r.drain(batch)
			return
		}
		if len(batch) > 0 && r.record(ctx, batch) {
			batch = nil
		}
	}
}

// record commits one batch; false keeps it for the next round (no leader
// now), while the queue behind it fills.
func (r *Recorder) record(ctx context.Context, batch []meta.Event) bool {
	var downloads, violations []meta.Event
	for _, e := range batch {
		if e.Name == meta.EventPolicyViolated {
			violations = append(violations, e)
		} else {
			downloads = append(downloads, e)
		}
	}
	if len(violations) > 0 {
		if _, err := r.commit.Apply(ctx, &meta.ViolationsRecord{Events: violations}); err != nil && ctx.Err() == nil {
			r.log.Warn("recording policy.violated events; they are dropped", "events", len(violations), "err", err)
			r.dropped.Add(float64(len(violations)))
		}
		if len(downloads) == 0 {
			return true
		}
		batch = downloads
	}
	if _, err := r.commit.Apply(ctx, &meta.EventsRecord{Events: batch}); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("recording download events", "events", len(batch), "err", err)
		}
		if len(batch) < meta.MaxRecordedEvents {
			return false
		}
		r.dropped.Add(float64(len(batch))) // it cannot grow: drop it rather than stall
	}
	return true
}

func (r *Recorder) drain(batch []meta.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		select {
		case e := <-r.queue:
			batch = append(batch, e)
			if len(batch) < meta.MaxRecordedEvents {
				continue
			}
		default:
		}
		if len(batch) == 0 {
			return
		}
		if !r.record(ctx, batch) {
			r.dropped.Add(float64(len(batch)))
			r.log.Warn("download events not recorded at shutdown", "events", len(batch))
			return
		}
		batch = nil
	}
}
