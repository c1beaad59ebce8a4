package downloads

import (
	"testing"
	"time"
)

func TestLast24h(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := New(func() time.Time { return now })
	c.Add()
	c.Add()
	now = now.Add(23 * time.Hour)
	c.Add()
	if n := c.Last24h(); n != 3 {
		t.Fatalf("after 23h: %d, want 3", n)
	}
	now = now.Add(2 * time.Hour) // the first two are now 25h old
	if n := c.Last24h(); n != 1 {
		t.Fatalf("after 25h: %d, want 1", n)
	}
	now = now.Add(48 * time.Hour)
	if n := c.Last24h(); n != 0 {
		t.Fatalf("after 73h: %d, want 0", n)
	}
}

// TestTakeAndReturn: what is counted waits, by hour, until taken; what is
// returned waits again, but not past two days.
func TestTakeAndReturn(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := New(func() time.Time { return now })
	c.Add()
	c.AddN(2)
	now = now.Add(time.Hour)
	c.Add()
	got := c.Take()
	h := now.Unix() / 3600
	if len(got) != 2 || got[h-1] != 3 || got[h] != 1 {
		t.Fatalf("taken %v", got)
	}
	if again := c.Take(); len(again) != 0 {
		t.Fatalf("taken twice: %v", again)
	}
	c.Return(map[int64]int64{h: 1, h - 100: 7})
	if back := c.Take(); len(back) != 1 || back[h] != 1 {
		t.Fatalf("after a return %v", back)
	}
}
