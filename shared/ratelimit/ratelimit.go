// Package ratelimit counts events per key in fixed windows: API requests
// per caller, login attempts, failed credential checks. Keys are hashed and
// the number of keys is bounded, so a caller who sends huge or endless
// distinct keys (a 1 MB username) costs a fixed, small amount of memory.
package ratelimit

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultMaxKeys bounds the keys one limiter remembers.
const DefaultMaxKeys = 100_000

// Limiter is a fixed-window counter per key. Fixed windows are simple to
// reason about and match the X-RateLimit-Reset header, which names the end
// of the current window.
type Limiter struct {
	limit   int
	window  time.Duration
	now     func() time.Time
	maxKeys int

	mu      sync.Mutex
	windows map[[16]byte]*list.Element
	order   *list.List // of *window, oldest start first
}

type window struct {
	key   [16]byte
	start time.Time
	count int
}

// Decision is the outcome of one Allow or Peek call.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the current window
}

// Seconds is d in whole seconds for a Retry-After header: rounded, and
// at least one.
func Seconds(d time.Duration) int { return max(1, int(d.Round(time.Second)/time.Second)) }

// RetryAfter is how long until the window resets, at least a second.
func (d Decision) RetryAfter(now time.Time) time.Duration {
	r := d.Reset.Sub(now)
	if r < time.Second {
		r = time.Second
	}
	return r
}

// New allows limit events per window per key; limit <= 0 allows all.
func New(limit int, per time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	if per <= 0 {
		per = time.Minute
	}
	return &Limiter{limit: limit, window: per, now: now, maxKeys: DefaultMaxKeys,
		windows: map[[16]byte]*list.Element{}, order: list.New()}
}

// SetLimit changes the limit and the window (a run-time setting): the
// windows counting go on with the new limit; a new window length applies
// from each key's next window.
func (l *Limiter) SetLimit(limit int, per time.Duration) {
	if per <= 0 {
		per = time.Minute
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit, l.window = limit, per
}

// Limit is the limit now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// WithMaxKeys sets how many keys the limiter remembers (tests use few).
func (l *Limiter) WithMaxKeys(n int) *Limiter {
	if n > 0 {
		l.maxKeys = n
	}
	return l
}

// Allow counts one event for key, unless the key is already at its limit.
func (l *Limiter) Allow(key string) Decision { return l.decide(key, true) }

// Peek says whether one more event would be allowed, and what would then
// remain, counting nothing.
func (l *Limiter) Peek(key string) Decision { return l.decide(key, false) }

// Len is the number of keys remembered.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.windows)
}

func (l *Limiter) decide(key string, count bool) Decision {
	now := l.now()
	id := hashKey(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit <= 0 {
		return Decision{Allowed: true, Reset: now.Add(l.window)}
	}
	l.expire(now)
	var w *window
	if el, ok := l.windows[id]; ok {
		w = el.Value.(*window)
	}
	if w == nil {
		if !count {
			return Decision{Allowed: true, Limit: l.limit, Remaining: l.limit - 1, Reset: now.Add(l.window)}
		}
		// Full of live windows: forget the oldest. Under a flood of
		// distinct keys that is the flood's own keys, and memory stays
		// bounded whatever arrives.
		for len(l.windows) >= l.maxKeys {
			l.drop(l.order.Front())
		}
		w = &window{key: id, start: now}
		l.windows[id] = l.order.PushBack(w)
	}
	d := Decision{Limit: l.limit, Reset: w.start.Add(l.window)}
	if w.count >= l.limit {
		return d
	}
	if count {
		w.count++
	}
	d.Allowed, d.Remaining = true, l.limit-w.count
	if !count {
		d.Remaining--
	}
	return d
}

// expire drops finished windows; windows start in insertion order, so the
// finished ones are at the front.
func (l *Limiter) expire(now time.Time) {
	for el := l.order.Front(); el != nil; el = l.order.Front() {
		if now.Before(el.Value.(*window).start.Add(l.window)) {
			return
		}
		l.drop(el)
	}
}

func (l *Limiter) drop(el *list.Element) {
	delete(l.windows, el.Value.(*window).key)
	l.order.Remove(el)
}

// hashKey keeps keys at a fixed size whatever the caller sent.
func hashKey(k string) [16]byte {
	sum := sha256.Sum256([]byte(k))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}
