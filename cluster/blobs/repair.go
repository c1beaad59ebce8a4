package blobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// Background repair: an origin holds every blob a record keeps that
// placement puts on it. One that missed some (it was down while they were
// uploaded, or joined later, or placement moved them to it) fetches them
// from its peers by digest, checked, without waiting for a download to
// ask: shortly after it starts, then every repairEvery. Under a placement
// that does not put every blob everywhere, the same pass drops the copies
// this origin holds but placement does not put on it (it took their
// upload, or a reader asked for them here), once every origin placement
// names holds them and they have not been made recent for Grace.

const (
	repairEvery = 10 * time.Minute
	repairFirst = 5 * time.Second // after start: the replica catches up first
	repairPage  = 1000
)

// RepairResult is what a repair pass did.
type RepairResult struct {
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
// put here. With fewer than two voters there is nothing to do.
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
		return res, nil
	}
	if err := s.fetchMissing(ctx, members, &res); err != nil {
		return res, err
	}
	res.Dropped, err = s.dropUnplaced(ctx, members)
	return res, err
}

// fetchMissing fetches the referenced blobs placed here that are not.
func (s *Store) fetchMissing(ctx context.Context, members []Member, res *RepairResult) error {
	if s.cfg.Referenced == nil {
		return nil
	}
	after := ""
	for ctx.Err() == nil {
		page, next, err := s.cfg.Referenced(after, repairPage)
		if err != nil {
			return err
		}
		for _, d := range page {
			if !s.placedHere(d, members) {
				continue
			}
			res.Checked++
			if _, err := s.Local.Stat(ctx, d); !errors.Is(err, blob.ErrNotFound) {
				continue
			}
			if err := s.fetchOnce(ctx, d); err != nil {
				res.Failed++
				s.cfg.Log.Warn("blob repair: no peer gave a blob", "digest", d, "err", err)
				continue
			}
			res.Fetched++
		}
		if after = next; after == "" {
			break
		}
	}
	return ctx.Err()
}

// dropUnplaced drops the copies placement does not put here whose every
// holder has them. Which to drop is decided first, asking the holders;
// the local store's sweep then drops them with their writers held off,
// so a write of the same blob made since (which makes it recent) keeps
// it.
func (s *Store) dropUnplaced(ctx context.Context, members []Member) (blob.Swept, error) {
	if _, all := s.place.(Everywhere); all {
		return blob.Swept{}, nil // every blob is placed everywhere
	}
	drop := map[string]bool{}
	err := s.Local.Walk(ctx, func(digest string, _ int64) error {
		holders := s.place.Holders(digest, members)
		if len(holders) == 0 || slices.ContainsFunc(holders, func(m Member) bool { return m.ID == s.cfg.Self }) {
			return nil
		}
		for _, h := range holders {
			if !s.cfg.Peers.HasBlob(ctx, h.Addr, digest) {
				return nil // not yet where it belongs: keep this copy
			}
		}
		drop[digest] = true
		return nil
	})
	if err != nil || len(drop) == 0 {
		return blob.Swept{}, err
	}
	res, err := s.Local.Sweep(ctx, s.cfg.Now().Add(-s.cfg.Grace), func(d string) (bool, error) { return drop[d], nil })
	return res.Removed, err
}
