package blobs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/progress"
)

// Background repair: an origin holds every blob a record keeps that
// placement puts on it. One that missed some (it was down while they were
// uploaded, or joined later, or placement moved them to it) fetches them
// from its peers by digest, checked, without waiting for a download to
// ask: shortly after it starts, then every repairEvery; a pass after the
// first checks only the blobs referenced since the one before (all of
// them again when the voters changed, and every repairWholeEvery). Under a placement
// that does not put every blob everywhere, the same pass drops the copies
// this origin holds but placement does not put on it (it took their
// upload, or a reader asked for them here), once every origin placement
// names holds them and they have not been made recent for Grace.

// RepairOperation names the repair in progress reports.
const RepairOperation = "blob_repair"

const (
	repairEvery      = 10 * time.Minute
	repairFirst      = 5 * time.Second // after start: the replica catches up first
	repairWholeEvery = time.Hour       // a pass walks every referenced blob again (one lost from disk is fetched)
	repairPage       = 1000
)

// repairMark is where the last repair pass left off: the log index its
// referenced blobs were complete up to, under which voters, and when it
// last walked them all; and how many copies placement does not put here
// came in (uploads taken here, pushes from peers, reads fetched here),
// against how many of those the last drop of such copies had seen.
type repairMark struct {
	upTo            uint64
	voters          string
	wholeAt         time.Time
	unplaced        uint64
	unplacedDropped uint64
}

// noteUnplaced records that a copy of digest came in here; one placement
// does not put here is dropped by the next repair pass.
func (s *Store) noteUnplaced(digest string, members []Member) {
	if _, all := s.place.(Everywhere); all || s.placedHere(digest, members) {
		return
	}
	s.repairMu.Lock()
	s.repair.unplaced++
	s.repairMu.Unlock()
}

// votersOf names the voters, to tell when they change.
func votersOf(members []Member) string {
	var ids []string
	for _, m := range members {
		if m.Voter {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// RepairResult is what a repair pass did.
type RepairResult struct {
	Full    bool       // the pass walked every referenced blob (else those referenced since the last)
	Checked int        // referenced blobs placement puts here
	Fetched int        // of them, fetched from a peer
	Failed  int        // of them, no peer gave
	Dropped blob.Swept // copies placement does not put here, dropped
}

// RepairLoop runs repair passes until ctx ends.
func (s *Store) RepairLoop(ctx context.Context) {
	wait := repairFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.After(wait):
		}
		wait = repairEvery
		res, err := s.Repair(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("blob repair pass", "err", err)
		}
		if res.Fetched > 0 || res.Failed > 0 || res.Dropped.Count > 0 {
			s.cfg.Log.Info("blob repair pass", "checked", res.Checked, "fetched", res.Fetched, "failed", res.Failed,
				"dropped", res.Dropped.Count)
		}
	}
}

// Repair is one pass: it fetches every referenced blob placement puts
// here that this origin lacks, then drops the copies placement does not
// put here. With fewer than two voters there is nothing to do. It counts
// what is missing before it fetches, so its progress (RepairStatus, and a
// log line every so often) says n of N.
func (s *Store) Repair(ctx context.Context) (RepairResult, error) {
	var res RepairResult
	members, err := s.members()
	if err != nil {
		return res, err
	}
	voters := 0
	for _, m := range members {
		if m.Voter {
			voters++
		}
	}
	if voters < 2 {
		s.missing.Store(0)
		return res, nil
	}
	s.repairMu.Lock()
	mark := s.repair
	s.repairMu.Unlock()
	incremental := s.cfg.ReferencedSince != nil && s.cfg.Applied != nil
	res.Full = !incremental || mark.upTo == 0 || mark.voters != votersOf(members) ||
		s.cfg.Now().Sub(mark.wholeAt) >= repairWholeEvery
	var upTo uint64
	if incremental {
		upTo = s.cfg.Applied() // what is referenced from here on, the next pass checks
	}
	var missing int64
	err = s.eachReferenced(ctx, res.Full, mark.upTo, func(page []string) {
		for _, d := range page {
			if s.placedHere(d, members) && s.lacks(ctx, d) {
				missing++
			}
		}
	})
	if err != nil {
		return res, err
	}
	// A pass covers every blob still missing: those a pass before failed
	// to fetch kept the mark where it was, so they are counted again.
	s.missing.Store(missing)
	s.progress.Start(missing)
	err = s.eachReferenced(ctx, res.Full, mark.upTo, func(page []string) { s.fetchPage(ctx, members, page, &res) })
	s.progress.End()
	if err != nil {
		return res, err
	}
	if res.Failed == 0 {
		// Blobs no peer gave are looked for again from the same mark.
		s.repairMu.Lock()
		s.repair.upTo, s.repair.voters = upTo, votersOf(members)
		if res.Full {
			s.repair.wholeAt = s.cfg.Now()
		}
		s.repairMu.Unlock()
	}
	if res.Full || mark.unplaced > mark.unplacedDropped {
		if res.Dropped, err = s.dropUnplaced(ctx, members); err == nil {
			// Copies that came in while it ran wait for the next pass.
			s.repairMu.Lock()
			s.repair.unplacedDropped = mark.unplaced
			s.repairMu.Unlock()
		}
	}
	return res, err
}

// eachReferenced gives fn the referenced digests a page at a time: every
// one (whole), or those referenced after log index after.
func (s *Store) eachReferenced(ctx context.Context, whole bool, after uint64, fn func(page []string)) error {
	if whole {
		if s.cfg.Referenced == nil {
			return nil
		}
		from := ""
		for ctx.Err() == nil {
			page, next, err := s.cfg.Referenced(from, repairPage)
			if err != nil {
				return err
			}
			fn(page)
			if from = next; from == "" {
				break
			}
		}
		return ctx.Err()
	}
	for ctx.Err() == nil {
		page, next, err := s.cfg.ReferencedSince(after, repairPage)
		if err != nil {
			return err
		}
		slices.Sort(page)
		fn(slices.Compact(page))
		if next == after {
			break
		}
		after = next
	}
	return ctx.Err()
}

// lacks reports whether the local store does not hold digest.
func (s *Store) lacks(ctx context.Context, digest string) bool {
	_, err := s.Local.Stat(ctx, digest)
	return errors.Is(err, blob.ErrNotFound)
}

func (s *Store) fetchPage(ctx context.Context, members []Member, page []string, res *RepairResult) {
	for _, d := range page {
		if ctx.Err() != nil {
			return
		}
		if !s.placedHere(d, members) {
			continue
		}
		res.Checked++
		if !s.lacks(ctx, d) {
			continue
		}
		if err := s.fetchOnce(ctx, d); err != nil {
			res.Failed++
			s.progress.Add(1, 1, 0)
			s.repairFailed.Add(1)
			s.cfg.Log.Warn("blob repair: no peer gave a blob", "digest", d, "err", err)
			continue
		}
		size, _ := s.Local.Stat(ctx, d)
		res.Fetched++
		s.progress.Add(1, 0, size)
		s.repairFetched.Add(1)
		s.repairBytes.Add(size)
		if s.missing.Add(-1) < 0 {
			s.missing.Store(0)
		}
	}
}

// RepairFigures are the repair's counts since the start, for metrics.
type RepairFigures struct {
	// Missing is how many blobs placed here this origin lacks, as the
	// last pass counted them, less those fetched since.
	Missing      int64
	Fetched      int64
	FetchedBytes int64
	Failed       int64
}

// RepairFigures reads the repair's counts.
func (s *Store) RepairFigures() RepairFigures {
	return RepairFigures{Missing: s.missing.Load(), Fetched: s.repairFetched.Load(), FetchedBytes: s.repairBytes.Load(),
		Failed: s.repairFailed.Load()}
}

// RepairStatus is the progress of the running repair pass, or of the
// last one.
func (s *Store) RepairStatus() progress.Status { return s.progress.Status() }

// dropUnplaced drops the copies placement does not put here whose every
// holder has them. Which to drop is decided first, asking the holders;
// the local store's sweep then drops them with their writers held off,
// so a write of the same blob made since (which makes it recent) keeps
// it.
//
// Copies it keeps (not on their holders yet, or recent) are looked at
// again by the next pass.
func (s *Store) dropUnplaced(ctx context.Context, members []Member) (blob.Swept, error) {
	if _, all := s.place.(Everywhere); all {
		return blob.Swept{}, nil // every blob is placed everywhere
	}
	drop := map[string]bool{}
	kept := 0
	err := s.Local.Walk(ctx, func(digest string, _ int64) error {
		holders := s.place.Holders(digest, members)
		if len(holders) == 0 || slices.ContainsFunc(holders, func(m Member) bool { return m.ID == s.cfg.Self }) {
			return nil
		}
		for _, h := range holders {
			if !s.cfg.Peers.HasBlob(ctx, h.Addr, digest) {
				kept++
				return nil // not yet where it belongs: keep this copy
			}
		}
		drop[digest] = true
		return nil
	})
	var res blob.SweepResult
	if err == nil && len(drop) > 0 {
		res, err = s.Local.Sweep(ctx, s.cfg.Now().Add(-s.cfg.Grace), func(d string) (bool, error) { return drop[d], nil })
	}
	if kept += len(drop) - res.Removed.Count; kept > 0 || err != nil {
		s.repairMu.Lock()
		s.repair.unplaced++ // kept for now: the next pass looks again
		s.repairMu.Unlock()
	}
	return res.Removed, err
}
