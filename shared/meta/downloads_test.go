package meta

import (
	"maps"
	"testing"
)

// TestDownloadsCounted: reports add up per hour, whoever sends them; an
// hour past the history is dropped as newer ones come; a report out of
// bounds is refused whole.
func TestDownloadsCounted(t *testing.T) {
	s := open(t)
	apply := func(c *DownloadsCounted) error { return s.Apply(0, c) }
	const h = 500000
	for _, c := range []*DownloadsCounted{{Hours: map[int64]int64{h: 2, h + 1: 5}}, {Hours: map[int64]int64{h + 1: 1, h + 2: 0}}} {
		if err := apply(c); err != nil {
			t.Fatal(err)
		}
	}
	read := func(from, to int64) map[int64]int64 {
		var out map[int64]int64
		_ = s.View(func(tx *Tx) error { out = tx.DownloadsByHour(from, to); return nil })
		return out
	}
	if got := read(h, h+3); !maps.Equal(got, map[int64]int64{h: 2, h + 1: 6}) {
		t.Fatalf("counts %v", got)
	}
	if got := read(h+1, h+2); !maps.Equal(got, map[int64]int64{h + 1: 6}) {
		t.Fatalf("one hour %v", got)
	}
	// Counted far later: the old hours go.
	if err := apply(&DownloadsCounted{Hours: map[int64]int64{h + DownloadHistoryHours: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := read(0, h+2*DownloadHistoryHours); !maps.Equal(got, map[int64]int64{h + 1: 6, h + DownloadHistoryHours: 1}) {
		t.Fatalf("after the history moved on %v", got)
	}
	for _, bad := range []*DownloadsCounted{{}, {Hours: map[int64]int64{h: -1}}, {Hours: map[int64]int64{-5: 1}}} {
		if err := apply(bad); err == nil {
			t.Errorf("%v accepted", bad.Hours)
		}
	}
}
