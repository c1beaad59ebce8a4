package events

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Gate says whether downloads are recorded as events. Downloads are the
// firehose of a registry (tens of thousands a second at the edges), and a
// recorded event is a replicated record: they are recorded while some
// active webhook subscribes to artifact.downloaded (or to everything),
// from the moment it did, or always when the operator asks
// (--event-log-downloads). The answer is kept per applied log index.
type Gate struct {
	store  *meta.Store
	always bool
	state  atomic.Pointer[gateState]
}

// gateState is the answer at one applied index.
type gateState struct {
	idx   uint64
	open  bool
	since time.Time
}

// NewGate makes a gate over store; always records every download.
func NewGate(store *meta.Store, always bool) *Gate { return &Gate{store: store, always: always} }

// Open reports whether a download now is recorded.
func (g *Gate) Open() bool {
	open, _ := g.Since()
	return open
}

// Since reports whether downloads are recorded, and from when (the
// earliest activation of a webhook that wants them; zero: always).
func (g *Gate) Since() (bool, time.Time) {
	if g.always {
		return true, time.Time{}
	}
	applied := g.store.LastApplied()
	if st := g.state.Load(); st != nil && st.idx == applied {
		return st.open, st.since
	}
	st := &gateState{idx: applied}
	_ = g.store.View(func(tx *meta.Tx) error {
		hooks, err := tx.Webhooks()
		for _, h := range hooks {
			if !h.Active || !slices.Contains(h.Events, "*") && !slices.Contains(h.Events, meta.EventArtifactDownloaded) {
				continue
			}
			if !st.open || h.ActiveSince.Before(st.since) {
				st.open, st.since = true, h.ActiveSince
			}
		}
		return err
	})
	g.state.Store(st)
	return st.open, st.since
}
