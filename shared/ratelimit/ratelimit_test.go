package ratelimit

import (
	"strings"
	"testing"
	"time"
)

func TestLimiterWindows(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(3, time.Minute, func() time.Time { return now })
	for i := 0; i < 3; i++ {
		d := l.Allow("a")
		if !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("event %d: %+v", i, d)
		}
	}
	if d := l.Allow("a"); d.Allowed || d.Remaining != 0 {
		t.Fatalf("4th event allowed: %+v", d)
	}
	if d := l.Allow("b"); !d.Allowed {
		t.Fatal("other key limited")
	}
	now = now.Add(time.Minute)
	if d := l.Allow("a"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("new window: %+v", d)
	}
	if d := New(0, time.Minute, nil).Allow("x"); !d.Allowed {
		t.Fatal("limit 0 must allow")
	}
}

func TestPeekCountsNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(2, time.Minute, func() time.Time { return now })
	for i := 0; i < 5; i++ {
		if d := l.Peek("k"); !d.Allowed {
			t.Fatalf("peek %d refused", i)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("peek remembered %d keys", l.Len())
	}
	l.Allow("k")
	l.Allow("k")
	if d := l.Peek("k"); d.Allowed {
		t.Fatal("peek allowed past the limit")
	}
}

// A flood of distinct, huge keys costs a bounded number of small entries.
func TestKeysBoundedAndHashed(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(10, time.Minute, func() time.Time { return now }).WithMaxKeys(100)
	big := strings.Repeat("u", 1<<20)
	for i := 0; i < 1000; i++ {
		l.Allow(big + string(rune('a'+i%26)) + strings.Repeat("x", i))
	}
	if n := l.Len(); n > 100 {
		t.Fatalf("%d keys kept, want at most 100", n)
	}
	// The newest keys are the ones kept.
	key := big + "zz"
	for i := 0; i < 10; i++ {
		l.Allow(key)
	}
	if d := l.Allow(key); d.Allowed {
		t.Fatal("a kept key lost its count")
	}
}

func TestExpiredWindowsAreDropped(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(1, time.Minute, func() time.Time { return now })
	l.Allow("a")
	l.Allow("b")
	now = now.Add(2 * time.Minute)
	l.Allow("c")
	if n := l.Len(); n != 1 {
		t.Fatalf("%d keys after expiry, want 1", n)
	}
}
