package scan

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Scan on upload: the leader follows the change feed for new artifacts
// and queues a scan of each one of a format advisory data covers, in a
// repository whose scan_on_upload setting is on (the default:
// security.scan_on_upload). Its cursor is replicated with the scans it
// queues, so a new leader carries on where the last one left off. A
// cluster whose follower never queued a scan starts from the feed's end
// when its leader starts: what was uploaded before scanning existed is
// scanned on request.

// cursorEvery is how long a cursor that queued nothing waits to be
// committed (with the next scans, or alone after it).
const cursorEvery = time.Minute

// follower is the scan-on-upload follower's position on this leader.
type follower struct {
	start         uint64 // where reading began, with no replicated cursor
	base, scanned uint64 // read up to scanned from the replicated cursor base
	committed     time.Time
}

// follow queues the scans of new uploads while ctx lasts.
func (s *Service) follow(ctx context.Context) {
	f := &follower{committed: time.Now()}
	s.cfg.Store.FollowLog(ctx, s.cfg.Poll, func(ctx context.Context) (bool, error) { return s.step(ctx, f) },
		func(err error) { s.cfg.Log.Warn("scanning uploads: reading new artifacts", "err", err) })
}

// step reads a batch of the feed and queues its uploads' scans.
func (s *Service) step(ctx context.Context, f *follower) (more bool, err error) {
	var st meta.ScannerState
	var scans []meta.Scan
	var next, applied uint64
	onByDefault := s.cfg.ScanOnUpload == nil || s.cfg.ScanOnUpload()
	now := s.cfg.Now().UTC()
	err = s.cfg.Store.View(func(tx *meta.Tx) error {
		st = tx.Scanner()
		applied = tx.Applied()
		from := st.Cursor
		if from == 0 {
			if f.start == 0 {
				f.start = applied
			}
			from = f.start
		}
		if f.base == st.Cursor && f.scanned > from {
			from = f.scanned
		}
		filter := meta.ChangeFilter{Kinds: []meta.Kind{meta.KindArtifact}}
		changes, n, err := tx.Changes(from, filter, 200)
		if errors.Is(err, meta.ErrCompacted) {
			changes, n, err = tx.Changes(tx.Horizon(), filter, 200)
		}
		if err != nil {
			return err
		}
		next = n
		for _, c := range changes {
			if c.Deleted {
				continue
			}
			var a meta.Artifact
			if json.Unmarshal(c.Value, &a) != nil || a.Companion || !scannable(a.Format) || len(tx.ScansOf(a.ID)) > 0 {
				continue // not a new upload: its record changed (its properties)
			}
			repo, err := tx.Repo(a.RepositoryID)
			if err != nil {
				continue // deleted meanwhile
			}
			if on, set := repo.Settings["scan_on_upload"]; set && on != "true" || !set && !onByDefault {
				continue
			}
			scans = append(scans, meta.Scan{ID: s.cfg.NewID(), ArtifactID: a.ID, Scanner: Scanner, Status: meta.ScanQueued,
				Trigger: "upload", RequestedBy: a.UploadedBy, CreatedAt: now})
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	atEnd := next >= applied
	if len(scans) == 0 && (next == f.scanned || time.Since(f.committed) < cursorEvery) {
		f.base, f.scanned = st.Cursor, max(next, f.scanned)
		return !atEnd, nil
	}
	if _, err := s.cfg.Commit.Apply(ctx, &meta.ScansRequest{Scans: scans, From: st.Cursor, To: max(next, 1)}); err != nil {
		return false, err
	}
	f.committed = time.Now()
	f.base, f.scanned = max(next, 1), max(next, 1)
	if len(scans) > 0 {
		s.Wake()
	}
	return !atEnd, nil
}

// rescanBatch is how many artifacts one step of a re-scan queues.
const rescanBatch = 500

// rescan queues, once the advisory database changed, a scan of every
// artifact that has a verdict (a completed scan), a batch a step, so
// that what new advisories name is found in what is already stored (each
// scan completing is a scan.completed event; a verdict changes with it).
// Its progress is replicated: a new leader goes on from there.
func (s *Service) rescan(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		for more := true; more && ctx.Err() == nil; {
			var err error
			if more, err = s.rescanStep(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, meta.ErrConflict) {
				s.cfg.Log.Warn("re-scanning after new advisories", "err", err)
				more = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) rescanStep(ctx context.Context) (more bool, err error) {
	var st meta.ScannerState
	var db *meta.AdvisoryDB
	var ids []string
	_ = s.cfg.Store.View(func(tx *meta.Tx) error {
		st, db = tx.Scanner(), tx.AdvisoryDB()
		if db == nil || st.Rescan != nil && st.Rescan.Digest == db.Digest && st.Rescan.Done {
			return nil
		}
		after := ""
		if st.Rescan != nil && st.Rescan.Digest == db.Digest {
			after = st.Rescan.After
		}
		ids = tx.VerdictIDs(after, rescanBatch)
		return nil
	})
	var stale []string // scanned against another database
	_ = s.cfg.Store.View(func(tx *meta.Tx) error {
		for _, id := range ids {
			if v := tx.Verdict(id); v != nil && db != nil && v.Advisories != db.Digest {
				stale = append(stale, id)
			}
		}
		return nil
	})
	if db == nil || st.Rescan != nil && st.Rescan.Digest == db.Digest && st.Rescan.Done {
		return false, nil
	}
	now := s.cfg.Now().UTC()
	r := &meta.Rescan{Digest: db.Digest, Done: len(ids) < rescanBatch}
	if st.Rescan != nil && st.Rescan.Digest == db.Digest {
		r.After = st.Rescan.After
	}
	var scans []meta.Scan
	for _, id := range stale {
		scans = append(scans, meta.Scan{ID: s.cfg.NewID(), ArtifactID: id, Scanner: Scanner, Status: meta.ScanQueued,
			Trigger: "advisories", RequestedBy: db.LoadedBy, CreatedAt: now})
	}
	if len(ids) > 0 {
		r.After = ids[len(ids)-1]
	}
	if _, err := s.cfg.Commit.Apply(ctx, &meta.ScansRequest{Scans: scans, Rescan: r}); err != nil {
		return false, err
	}
	if len(scans) > 0 {
		s.cfg.Log.Info("advisories changed: artifacts queued for a new scan", "artifacts", len(scans), "done", r.Done)
		s.Wake()
	}
	return !r.Done, nil
}
