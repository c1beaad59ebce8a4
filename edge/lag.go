package edge

import (
	"sync"
	"time"
)

// lagMark tells a replica that falls behind from one that is merely
// between two reads of the feed: it keeps an index an origin had applied,
// seen at a heartbeat, that the replica had not reached yet, and when.
// The replica is lagging when it has not reached that index within a
// limit; a replica that keeps up passes each mark within one read.
type lagMark struct {
	mu    sync.Mutex
	index uint64
	at    time.Time
}

// observe is told, at each heartbeat, the origin's index and the
// replica's.
func (m *lagMark) observe(origin, applied uint64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.index != 0 && applied < m.index {
		return // still short of the older mark: that one counts
	}
	m.index, m.at = 0, time.Time{}
	if origin > applied {
		m.index, m.at = origin, now
	}
}

// lagging reports whether the replica, now at applied, has been short of
// the mark for longer than limit.
func (m *lagMark) lagging(applied uint64, now time.Time, limit time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.index != 0 && applied < m.index && now.Sub(m.at) > limit
}
