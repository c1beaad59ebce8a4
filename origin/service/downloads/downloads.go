// Package downloads counts downloads over a sliding day, per minute, for
// the downloads_24h statistic, and keeps by hour those not yet reported
// to the cluster's history (Take, Return).
package downloads

import (
	"sync"
	"time"
)

const buckets = 24 * 60

// Counter counts events in one-minute buckets over the last 24 hours.
type Counter struct {
	mu     sync.Mutex
	now    func() time.Time
	counts [buckets]int64
	stamp  [buckets]int64 // the minute each bucket holds
	// pending are the downloads not yet reported, by Unix hour.
	pending map[int64]int64
}

// keepHours bounds what waits to be reported (an origin that cannot
// commit keeps the last two days).
const keepHours = 48

// New returns a counter; now nil uses the wall clock.
func New(now func() time.Time) *Counter {
	if now == nil {
		now = time.Now
	}
	return &Counter{now: now, pending: map[int64]int64{}}
}

// Add counts one download now.
func (c *Counter) Add() { c.AddN(1) }

// AddN counts n downloads now (an edge node's batch).
func (c *Counter) AddN(n int64) {
	if n <= 0 {
		return
	}
	m := c.now().Unix() / 60
	i := m % buckets
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp[i] != m {
		c.stamp[i], c.counts[i] = m, 0
	}
	c.counts[i] += n
	c.pending[m/60] += n
}

// Take returns the downloads counted since the last Take, by Unix hour,
// and forgets them.
func (c *Counter) Take() map[int64]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.pending
	c.pending = map[int64]int64{}
	return out
}

// Return puts back what Take gave and could not be reported, keeping the
// last keepHours hours.
func (c *Counter) Return(m map[int64]int64) {
	now := c.now().Unix() / 3600
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, n := range m {
		if h > now-keepHours {
			c.pending[h] += n
		}
	}
}

// Last24h sums the buckets of the last 24 hours.
func (c *Counter) Last24h() int64 {
	m := c.now().Unix() / 60
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for i := range c.counts {
		if m-c.stamp[i] < buckets {
			n += c.counts[i]
		}
	}
	return n
}
