// Package gc is the origin's garbage collector: it removes blobs that no
// record refers to, abandoned upload sessions, and files left behind by
// failed or crashed writes.
//
// The mark is the metadata store's referrer index (meta.Tx.Referenced),
// kept by every command that adds or drops a reference, so a collection
// never walks the metadata. The sweep is the blob store's
// (blob.Sweeper): it removes a blob only when it was not made recent
// within the grace period and, with that digest's writers held off, the
// index says nothing refers to it. Every write makes the blob it will
// refer to recent before it commits its record, so a collection running
// under upload load never removes a blob that a committed record refers
// to, and an upload in flight keeps its blob for the grace period.
package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/metrics"
	"github.com/depot-registry/depot/shared/progress"
)

// DefaultGrace is how recent a blob may be and still be collected: more
// than any write takes from storing a blob to committing its record.
const DefaultGrace = time.Hour

// ErrRunning is returned by Run while another collection runs.
var ErrRunning = errors.New("a garbage collection is running already")

// Config of a Collector.
type Config struct {
	Meta  *meta.Store
	Blobs blob.Store
	// Uploads holds upload sessions; those idle for longer than
	// UploadTTL are abandoned and removed.
	Uploads   blob.Ingester
	UploadTTL time.Duration
	// Scratch is the directory of requests' temporary files; files there
	// older than the grace period are left over.
	Scratch string
	Grace   time.Duration
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *metrics.GC // nil: none
	// Stored is how many blobs the store holds (0: not known), the N of
	// a collection's progress (blobs scanned, n of N).
	Stored func() int64
}

// Collector runs collections, one at a time.
type Collector struct {
	cfg      Config
	running  sync.Mutex
	progress *progress.Tracker
}

// New returns a collector; a zero Grace is DefaultGrace.
func New(cfg Config) *Collector {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, progress: progress.New("garbage_collection", cfg.Log)}
}

// Status is the progress of the running collection, or of the last one.
func (c *Collector) Status() progress.Status { return c.progress.Status() }

// Result is what a collection found and removed; it is the answer of
// POST /api/v1/admin/cleanup.
type Result struct {
	StartedAt    time.Time `json:"started_at"`
	DurationMS   int64     `json:"duration_ms"`
	GraceSeconds int64     `json:"grace_seconds"`
	BlobsScanned int       `json:"blobs_scanned"`
	// Blobs are stored blobs no record refers to.
	Blobs blob.Swept `json:"blobs"`
	// Uploads are upload sessions idle for longer than their limit.
	Uploads blob.Swept `json:"uploads"`
	// TempFiles are files failed or crashed writes left behind.
	TempFiles blob.Swept `json:"temp_files"`
	// BytesFreed sums the three.
	BytesFreed int64 `json:"bytes_freed"`
}

// Run collects once, or returns ErrRunning while another collection runs.
func (c *Collector) Run(ctx context.Context) (Result, error) {
	if !c.running.TryLock() {
		return Result{}, ErrRunning
	}
	defer c.running.Unlock()
	start, began := c.cfg.Now(), time.Now()
	res, err := c.collect(ctx, start)
	took := time.Since(began)
	res.StartedAt, res.DurationMS, res.GraceSeconds = start.UTC(), took.Milliseconds(), int64(c.cfg.Grace/time.Second)
	res.BytesFreed = res.Blobs.Bytes + res.Uploads.Bytes + res.TempFiles.Bytes
	c.observe(res, err, took)
	return res, err
}

func (c *Collector) collect(ctx context.Context, now time.Time) (Result, error) {
	var res Result
	cutoff := now.Add(-c.cfg.Grace)
	var stored int64
	if c.cfg.Stored != nil {
		stored = c.cfg.Stored()
	}
	c.progress.Start(stored)
	defer c.progress.End()
	trace := &blob.SweepTrace{Scanned: func(size int64) { c.progress.Add(1, 0, size) }}
	swept, err := c.cfg.Blobs.Sweep(blob.WithSweepTrace(ctx, trace), cutoff, c.unused)
	res.BlobsScanned, res.Blobs, res.TempFiles = swept.Scanned, swept.Removed, swept.Temp
	if err != nil {
		return res, fmt.Errorf("sweeping blobs: %w", err)
	}
	if c.cfg.Uploads != nil && c.cfg.UploadTTL > 0 {
		var err error
		if res.Uploads, err = c.cfg.Uploads.SweepUploads(ctx, now.Add(-max(c.cfg.UploadTTL, c.cfg.Grace))); err != nil {
			return res, fmt.Errorf("sweeping uploads: %w", err)
		}
	}
	if c.cfg.Scratch != "" {
		// Scratch files carry the kernel's times: the grace on the wall clock.
		scratch, err := sweepFiles(ctx, c.cfg.Scratch, time.Now().Add(-c.cfg.Grace))
		res.TempFiles.Count += scratch.Count
		res.TempFiles.Bytes += scratch.Bytes
		if err != nil {
			return res, fmt.Errorf("sweeping scratch files: %w", err)
		}
	}
	return res, nil
}

// unused asks the referrer index about one digest.
func (c *Collector) unused(digest string) (bool, error) {
	var used bool
	err := c.cfg.Meta.View(func(tx *meta.Tx) error {
		used = tx.Referenced(digest)
		return nil
	})
	return !used, err
}

func (c *Collector) observe(res Result, err error, took time.Duration) {
	attrs := []any{"blobs_scanned", res.BlobsScanned, "blobs_removed", res.Blobs.Count, "uploads_removed", res.Uploads.Count,
		"temp_files_removed", res.TempFiles.Count, "bytes_freed", res.BytesFreed, "duration", took.Round(time.Millisecond)}
	if err != nil {
		c.cfg.Log.Error("garbage collection failed", append(attrs, "err", err)...)
	} else {
		c.cfg.Log.Info("garbage collection done", attrs...)
	}
	m := c.cfg.Metrics
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	} else {
		m.LastSuccess.SetToCurrentTime()
	}
	m.Runs.WithLabelValues(outcome).Inc()
	m.Duration.Observe(took.Seconds())
	for kind, f := range map[string]blob.Swept{"blob": res.Blobs, "upload": res.Uploads, "temp": res.TempFiles} {
		m.Removed.WithLabelValues(kind).Add(float64(f.Count))
		m.RemovedBytes.WithLabelValues(kind).Add(float64(f.Bytes))
	}
}

// Every collects every interval until ctx ends (interval <= 0: never).
// A collection already running when one is due is not doubled.
func (c *Collector) Every(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := c.Run(ctx); errors.Is(err, ErrRunning) {
				c.cfg.Log.Info("scheduled garbage collection skipped: one is running")
			}
		}
	}
}

// sweepFiles removes the regular files under dir last modified before
// cutoff, keeping the directories.
func sweepFiles(ctx context.Context, dir string, cutoff time.Time) (blob.Swept, error) {
	var swept blob.Swept
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // the directory is made on first use; or gone meanwhile
		case err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case !d.Type().IsRegular():
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		swept.Add(fi.Size())
		return nil
	})
	return swept, err
}
