// Package progress follows a long operation (an origin repairing its
// blobs, an edge prefetching, a garbage collection): while it runs, a log
// line every Every says how far it is (n of N, bytes, rate, ETA), and
// Status answers the same for health reports and listings.
package progress

import (
	"log/slog"
	"sync"
	"time"
)

// Every is how often a running operation logs its progress.
const Every = 10 * time.Second

// Status is an operation's progress as reports show it (the `sync` object
// of health and of the cluster and edge listings).
type Status struct {
	Operation string `json:"operation"`
	// Running is true from Start to End.
	Running bool `json:"running"`
	// Done of Total items (Total 0: not known yet); Failed of Done did not
	// succeed; Bytes is what the done items weighed.
	Done   int64 `json:"done"`
	Total  int64 `json:"total"`
	Failed int64 `json:"failed"`
	Bytes  int64 `json:"bytes"`
	// BytesPerSecond is the rate since the start; ETASeconds is how long
	// the rest should take at the pace so far (absent when not known).
	BytesPerSecond int64      `json:"bytes_per_second"`
	ETASeconds     *int64     `json:"eta_seconds,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
}

// Tracker follows one operation at a time, run again and again (each
// pass of a loop). Its methods are safe for concurrent use; a nil
// Tracker does nothing.
type Tracker struct {
	op    string
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	st      Status
	started time.Time
	stop    chan struct{}
	logged  bool // a progress line was logged for this run
}

// New returns the tracker of an operation named op, logging to log.
func New(op string, log *slog.Logger) *Tracker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{op: op, log: log, every: Every, now: time.Now, st: Status{Operation: op}}
}

// Start begins a run of total items (0: not known yet), logging its
// progress every Every until End.
func (t *Tracker) Start(total int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop != nil {
		close(t.stop)
	}
	now := t.now()
	t.started, t.logged = now, false
	t.st = Status{Operation: t.op, Running: true, Total: total, StartedAt: &now}
	stop := make(chan struct{})
	t.stop = stop
	go t.ticker(stop)
}

func (t *Tracker) ticker(stop chan struct{}) {
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.mu.Lock()
			st := t.statusLocked()
			t.logged = true
			t.mu.Unlock()
			t.log.Info(t.op+" in progress", attrs(st)...)
		}
	}
}

// Grow adds n items to the total (an operation that finds its work a
// page at a time).
func (t *Tracker) Grow(n int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.st.Total += n
	t.mu.Unlock()
}

// Add records n items done, weighing bytes; failed of them did not
// succeed.
func (t *Tracker) Add(n, failed, bytes int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.st.Done += n
	t.st.Failed += failed
	t.st.Bytes += bytes
	t.st.Total = max(t.st.Total, t.st.Done)
	t.mu.Unlock()
}

// End ends the run. A run that logged its progress logs its end too.
func (t *Tracker) End() {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
	now := t.now()
	st := t.statusLocked()
	t.st.Running, t.st.EndedAt = false, &now
	t.st.BytesPerSecond, t.st.ETASeconds = st.BytesPerSecond, nil
	logged := t.logged
	t.mu.Unlock()
	if logged {
		t.log.Info(t.op+" done", "done", st.Done, "total", st.Total, "failed", st.Failed, "bytes", st.Bytes,
			"took", now.Sub(t.started).Round(time.Second).String())
	}
}

// Status is the current (or last) run's progress.
func (t *Tracker) Status() Status {
	if t == nil {
		return Status{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.st.Running {
		return t.st
	}
	return t.statusLocked()
}

// statusLocked computes the rate and ETA of the running operation.
func (t *Tracker) statusLocked() Status {
	st := t.st
	elapsed := t.now().Sub(t.started).Seconds()
	if elapsed > 0 {
		st.BytesPerSecond = int64(float64(st.Bytes) / elapsed)
		if st.Done > 0 && st.Total > st.Done {
			eta := int64(elapsed / float64(st.Done) * float64(st.Total-st.Done))
			st.ETASeconds = &eta
		}
	}
	return st
}

// attrs are a status's log attributes.
func attrs(st Status) []any {
	a := []any{"done", st.Done, "total", st.Total, "failed", st.Failed, "bytes", st.Bytes, "bytes_per_second", st.BytesPerSecond}
	if st.ETASeconds != nil {
		a = append(a, "eta", (time.Duration(*st.ETASeconds) * time.Second).String())
	}
	return a
}

// Sync states: a node holds everything it should, is fetching what it
// lacks, or lacks some and is not fetching now (the last pass could not
// get them; the next tries again).
const (
	Synced  = "synced"
	Syncing = "syncing"
	Behind  = "behind"
)

// Sync is how far a node is from holding the blobs it should (the `sync`
// object of health and of the cluster and edge listings): its state, the
// blobs it still lacks, and the progress of the operation bringing them
// (an origin's blob repair, an edge's prefetch).
type Sync struct {
	State   string `json:"state"`
	Missing int64  `json:"missing_blobs"`
	Status
}

// SyncOf is the sync of a node whose operation is at st, lacking missing
// blobs.
func SyncOf(st Status, missing int64) *Sync {
	s := &Sync{State: Synced, Missing: missing, Status: st}
	switch {
	case st.Running:
		s.State = Syncing
	case missing > 0:
		s.State = Behind
	}
	return s
}
