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
