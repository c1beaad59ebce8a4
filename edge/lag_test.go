package edge

import (
	"testing"
	"time"
)

// TestLagMark: a replica that reaches each index the origin had within
// the limit is not lagging, however far behind it is at any moment; one
// that stays short of an index past the limit is, until it reaches it.
func TestLagMark(t *testing.T) {
	var m lagMark
	t0 := time.Unix(1_800_000_000, 0)
	limit := time.Minute
	m.observe(100, 90, t0)
	if m.lagging(95, t0.Add(30*time.Second), limit) {
		t.Fatal("lagging within the limit")
	}
	m.observe(200, 100, t0.Add(30*time.Second)) // reached the first mark: a new one
	if m.lagging(150, t0.Add(80*time.Second), limit) {
		t.Fatal("lagging 50 s after the second mark")
	}
	m.observe(300, 150, t0.Add(80*time.Second)) // short of the second: it stays
	if !m.lagging(150, t0.Add(91*time.Second), limit) {
		t.Fatal("not lagging 61 s short of a mark")
	}
	if m.lagging(200, t0.Add(91*time.Second), limit) {
		t.Fatal("lagging once the mark is reached")
	}
	m.observe(300, 300, t0.Add(95*time.Second))
	if m.lagging(300, t0.Add(10*time.Minute), limit) {
		t.Fatal("lagging when caught up")
	}
}
