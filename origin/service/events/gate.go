package events

import (
	"slices"
	"sync/atomic"

	"github.com/depot-registry/depot/shared/meta"
)

// Gate says whether downloads are recorded as events. Downloads are the
// firehose of a registry (tens of thousands a second at the edges), and a
// recorded event is a replicated record: they are recorded while some
// active webhook subscribes to artifact.downloaded (or to everything),
// or always when the operator asks (--event-log-downloads). The answer is
// kept per applied log index, so a subscription counts from the download
// after it.
type Gate struct {
	store  *meta.Store
	always bool
	idx    atomic.Uint64 // the applied index want was read at (+1; 0 = never)
	want   atomic.Bool
}

// NewGate makes a gate over store; always records every download.
func NewGate(store *meta.Store, always bool) *Gate { return &Gate{store: store, always: always} }

// Open reports whether a download now is recorded.
func (g *Gate) Open() bool {
	if g.always {
		return true
	}
	if applied := g.store.LastApplied(); g.idx.Load() != applied+1 {
		want := false
		_ = g.store.View(func(tx *meta.Tx) error {
			hooks, err := tx.Webhooks()
			for _, h := range hooks {
				want = want || h.Active && (slices.Contains(h.Events, "*") || slices.Contains(h.Events, meta.EventArtifactDownloaded))
			}
			return err
		})
		g.want.Store(want)
		g.idx.Store(applied + 1)
	}
	return g.want.Load()
}
