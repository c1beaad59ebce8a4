// Package indexer is the leader's search indexer: it follows the change
// feed for artifacts, reads each new file with its format's inspector,
// and commits what the package says of itself (meta.PackageInfo), which
// the store indexes for search on every origin and edge. Its cursor is
// replicated with what it commits, so the next leader carries on from it;
// a reindex moves the cursor back to the start.
package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/metrics"
)

// Config is the indexer's.
type Config struct {
	Store  *meta.Store
	Commit meta.Committer
	Blobs  blob.Opener
	// Formats are the format handlers by repository format (gradle ->
	// maven); those that are format.Inspectors are asked.
	Formats map[string]format.Format
	Log     *slog.Logger
	Metrics *metrics.Search
	Now     func() time.Time
	// Batch is how many artifacts one command records (default 100).
	Batch int
	// Timeout bounds the inspection of one file (default 30 s).
	Timeout time.Duration
	// Poll is how often it looks for work when nothing wakes it (default 5 s).
	Poll time.Duration
}

// Indexer follows the change feed (Run, on the leader).
type Indexer struct {
	cfg Config
	// scanned is how far this leader has read the feed beyond the
	// committed cursor (base) without finding an artifact: changes of
	// other kinds are not read twice, and no command is committed for
	// them (a command per heartbeat would feed itself).
	base, scanned uint64
	// failures not reported yet, the first of them, and when the last
	// report was: at most one warning a minute.
	failed     int
	firstFail  string
	lastReport time.Time
	// committed is when the cursor was last committed.
	committed time.Time
	// reindex is the start of the last reindex seen.
	reindex time.Time
}

// cursorEvery is how often the cursor is committed when nothing else is.
const cursorEvery = time.Minute

// New makes an indexer.
func New(cfg Config) *Indexer {
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	return &Indexer{cfg: cfg}
}

// Run indexes until ctx ends (the leadership went).
func (ix *Indexer) Run(ctx context.Context) {
	defer ix.cfg.Metrics.Behind.Set(0) // the next leader reports it
	ix.committed = time.Now()
	ix.cfg.Store.FollowLog(ctx, ix.cfg.Poll, ix.Step, func(err error) { ix.cfg.Log.Warn("search indexer: reading new artifacts", "err", err) })
}

// Step reads one batch of the feed and records it: more reports that
// the feed has more to read now.
func (ix *Indexer) Step(ctx context.Context) (more bool, err error) {
	var st meta.IndexerState
	var changes []meta.Change
	var next, applied uint64
	err = ix.cfg.Store.View(func(tx *meta.Tx) error {
		st = tx.Indexer()
		applied = tx.Applied()
		if r := st.Reindex; r != nil && !r.StartedAt.Equal(ix.reindex) {
			// A reindex began: read it all again, whatever was read.
			ix.reindex, ix.scanned = r.StartedAt, 0
		}
		from := st.Cursor
		if ix.base == st.Cursor && ix.scanned > from {
			from = ix.scanned
		}
		var err error
		changes, next, err = tx.Changes(from, meta.ChangeFilter{Kinds: []meta.Kind{meta.KindArtifact}}, ix.cfg.Batch)
		if errors.Is(err, meta.ErrCompacted) {
			// Too far behind for the feed's deletions: read every live
			// artifact again, from the start.
			changes, next, err = tx.Changes(0, meta.ChangeFilter{Kinds: []meta.Kind{meta.KindArtifact}}, ix.cfg.Batch)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	ix.cfg.Metrics.Behind.Set(float64(applied - min(applied, next)))
	atEnd := next >= applied
	running := st.Reindex != nil && st.Reindex.Status == "running"
	cmd := &meta.PackageInfoPut{From: st.Cursor, To: next}
	for _, c := range changes {
		if c.Deleted {
			continue
		}
		cmd.Read++
		info, outcome := ix.inspect(ctx, c)
		ix.cfg.Metrics.Inspected.WithLabelValues(outcome).Inc()
		switch outcome {
		case "ok":
			cmd.Infos = append(cmd.Infos, info)
		case "failed":
			cmd.Failed++
		}
	}
	// Nothing to record (no package says anything new, no reindex to
	// report on): remember how far the feed was read, and commit the
	// cursor alone only now and then, so that what the next leader reads
	// again stays small without a log entry after every upload.
	if len(cmd.Infos) == 0 && !running && (cmd.Read == 0 || time.Since(ix.committed) < cursorEvery) {
		ix.base, ix.scanned = st.Cursor, next
		ix.report(atEnd)
		return !atEnd, nil
	}
	if running && atEnd {
		at := ix.cfg.Now().UTC()
		cmd.Finished, cmd.At = true, &at
	}
	if _, err := ix.cfg.Commit.Apply(ctx, cmd); err != nil {
		return false, err
	}
	ix.committed = time.Now()
	ix.report(atEnd)
	ix.base, ix.scanned = next, next
	if cmd.Finished {
		ix.cfg.Log.Info("search indexer: reindex finished", "artifacts", st.Reindex.Done+cmd.Read, "failed", st.Reindex.Failed+cmd.Failed)
	}
	return !atEnd, nil
}

// fail notes a file that could not be read: each at debug level, and a
// warning with their count and the first one at most once a minute
// (report).
func (ix *Indexer) fail(id, path string, err error) {
	ix.cfg.Log.Debug("search indexer: a file cannot be inspected", "artifact", id, "path", path, "err", err)
	if ix.failed == 0 {
		ix.firstFail = path + " (artifact " + id + "): " + err.Error()
	}
	ix.failed++
}

// report warns of the failures since the last report, at most once a
// minute unless now.
func (ix *Indexer) report(now bool) {
	if ix.failed == 0 || !now && time.Since(ix.lastReport) < time.Minute {
		return
	}
	ix.cfg.Log.Warn("search indexer: files could not be inspected; they are found by name only (the debug log lists each)",
		"files", ix.failed, "first", ix.firstFail)
	ix.failed, ix.lastReport = 0, time.Now()
}

// inspect reads what an artifact's file says of its package: outcome
// ok (info is it), none (its format says nothing search uses) or failed.
func (ix *Indexer) inspect(ctx context.Context, c meta.Change) (meta.PackageInfo, string) {
	var a meta.Artifact
	if err := json.Unmarshal(c.Value, &a); err != nil {
		ix.fail(c.Key, "", err)
		return meta.PackageInfo{}, "failed"
	}
	in, ok := ix.cfg.Formats[a.Format].(format.Inspector)
	if !ok {
		return meta.PackageInfo{}, "none"
	}
	ctx, cancel := context.WithTimeout(ctx, ix.cfg.Timeout)
	defer cancel()
	f, err := ix.cfg.Blobs.Open(ctx, a.Digest)
	if err != nil {
		ix.fail(a.ID, a.Path, err)
		return meta.PackageInfo{}, "failed"
	}
	defer f.Close()
	p, err := in.Inspect(ctx, format.Stored{Path: a.Path, File: f, Size: f.Size(), Blobs: ix.cfg.Blobs})
	if err != nil {
		ix.fail(a.ID, a.Path, err)
		return meta.PackageInfo{}, "failed"
	}
	info := meta.PackageInfo{RepositoryID: a.RepositoryID, Name: a.PackageName, ArtifactID: a.ID, Summary: p.Summary,
		Description: p.Description, Licenses: p.Licenses, Keywords: p.Keywords, Homepage: p.Homepage, Source: p.Repository}
	if info.Empty() {
		return info, "none"
	}
	return info, "ok"
}
