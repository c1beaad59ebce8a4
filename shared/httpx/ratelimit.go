package httpx

import (
	"sync"
	"time"
)

// Limiter is a fixed-window counter per key (client address or user).
// Fixed windows are simple to reason about and match the X-RateLimit-Reset
// header, which names the end of the current window.
type Limiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	windows map[string]*window
	swept   time.Time
}

type window struct {
	start time.Time
	count int
}

// Decision is the outcome of one Allow call.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the current window
}

// NewLimiter allows limit events per window per key; limit <= 0 allows all.
func NewLimiter(limit int, per time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	if per <= 0 {
		per = time.Minute
	}
	return &Limiter{limit: limit, window: per, now: now, windows: map[string]*window{}}
}

// Allow counts one event for key.
func (l *Limiter) Allow(key string) Decision {
	now := l.now()
	if l.limit <= 0 {
		return Decision{Allowed: true, Limit: 0, Remaining: 0, Reset: now.Add(l.window)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	w := l.windows[key]
	if w == nil || !now.Before(w.start.Add(l.window)) {
		w = &window{start: now}
		l.windows[key] = w
	}
	d := Decision{Limit: l.limit, Reset: w.start.Add(l.window)}
	if w.count >= l.limit {
		return d
	}
	w.count++
	d.Allowed, d.Remaining = true, l.limit-w.count
	return d
}

// sweep drops finished windows now and then, so idle clients cost nothing.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < l.window {
		return
	}
	l.swept = now
	for k, w := range l.windows {
		if !now.Before(w.start.Add(l.window)) {
			delete(l.windows, k)
		}
	}
}
