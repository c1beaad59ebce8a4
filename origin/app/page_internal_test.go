package app

import "testing"

func FuzzPageWindow(f *testing.F) {
	f.Add(1, 20, 1000)
	f.Add(0, 0, 5)
	f.Add(-3, 1_000_000, 7)
	f.Add(1<<62, 100, 10)
	f.Fuzz(func(t *testing.T, number, limit, n int) {
		n = min(max(n, 0), 1<<20)
		pg := Page{Number: number, Limit: limit}
		from, to := pg.window(n)
		if from < 0 || to > n || from > to || to-from > MaxPageLimit {
			t.Fatalf("page %d limit %d of %d: window %d..%d", number, limit, n, from, to)
		}
		if off, c := pg.offset(), pg.clamped(); off < 0 || c.Limit < 1 || c.Limit > MaxPageLimit || c.Number < 1 || c.Number > MaxPageNumber {
			t.Fatalf("page %d limit %d: offset %d, clamped %+v", number, limit, off, c)
		}
	})
}

func TestPageWindow(t *testing.T) {
	for _, c := range []struct {
		pg       Page
		n        int
		from, to int
	}{
		{Page{1, 20}, 50, 0, 20},
		{Page{3, 20}, 50, 40, 50},
		{Page{4, 20}, 50, 50, 50},
		{Page{0, 0}, 5, 0, 5}, // the default limit
		{Page{2, 500}, 250, 100, 200},
	} {
		if from, to := c.pg.window(c.n); from != c.from || to != c.to {
			t.Errorf("%+v of %d: %d..%d, want %d..%d", c.pg, c.n, from, to, c.from, c.to)
		}
	}
}
