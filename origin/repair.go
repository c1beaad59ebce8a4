package origin

import (
	"context"
	"errors"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Background repair: every origin of a cluster holds every blob a record
// keeps. One that missed some (it was down while they were uploaded, or
// joined later) fetches them from its peers by digest, verified, without
// waiting for a download to ask: shortly after it starts, then every
// repairEvery.

const (
	repairEvery = 10 * time.Minute
	repairFirst = 5 * time.Second // after start: the replica catches up first
	repairPage  = 1000
)

// repairLoop runs repair passes until ctx ends.
func (o *Origin) repairLoop(ctx context.Context, readers *peerBlobs) {
	wait := repairFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = repairEvery
		if o.node.Voters() < 2 {
			continue
		}
		checked, fetched, failed := o.repair(ctx, readers)
		if fetched > 0 || failed > 0 {
			o.log.Info("blob repair pass", "checked", checked, "fetched", fetched, "failed", failed)
		}
	}
}

// repair fetches every referenced blob this origin lacks from a peer.
func (o *Origin) repair(ctx context.Context, readers *peerBlobs) (checked, fetched, failed int) {
	after := ""
	for ctx.Err() == nil {
		var page []string
		_ = o.store.View(func(tx *meta.Tx) error {
			page, after = tx.ReferencedBlobs(after, repairPage)
			return nil
		})
		for _, d := range page {
			checked++
			if _, err := o.blobs.Stat(ctx, d); !errors.Is(err, blob.ErrNotFound) {
				continue
			}
			if err := readers.fetchOnce(ctx, d); err != nil {
				failed++
				o.log.Warn("blob repair: no peer gave a blob", "digest", d, "err", err)
				continue
			}
			fetched++
		}
		if after == "" {
			break
		}
	}
	return checked, fetched, failed
}
