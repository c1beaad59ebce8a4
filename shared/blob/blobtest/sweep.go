package blobtest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// Clock is a test clock a store under RunSweeper stamps blobs with.
type Clock struct{ ns atomic.Int64 }

// Now reads the clock.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// RunSweeper checks blob.Sweeper. newStore returns an empty store whose
// notion of "recent" follows now.
func RunSweeper(t *testing.T, newStore func(t *testing.T, now func() time.Time) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store, c *Clock)
	}{
		{"OldUnused", testSweepOldUnused},
		{"AtCutoff", testSweepAtCutoff},
		{"Keep", testSweepKeep},
		{"UnusedError", testSweepUnusedError},
		{"ConcurrentWriters", testSweepConcurrentWriters},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Clock{}
			c.Set(epoch)
			tc.fn(t, newStore(t, c.Now), c)
		})
	}
}

func sweep(t *testing.T, s blob.Store, cutoff time.Time, used ...string) blob.SweepResult {
	t.Helper()
	res, err := s.Sweep(t.Context(), cutoff, func(d string) (bool, error) {
		for _, u := range used {
			if u == d {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return res
}

func wantGone(t *testing.T, s blob.Store, digest string) {
	t.Helper()
	if _, err := s.Stat(t.Context(), digest); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat(%s) after sweep: err = %v, want ErrNotFound", digest, err)
	}
}

// testSweepOldUnused: of four blobs written long ago, the sweep removes
// only the one that is unused and was not made recent again since (by
// Keep, or by a Put of the same bytes).
func testSweepOldUnused(t *testing.T, s blob.Store, c *Clock) {
	old, kept, reput, used := []byte("old and unused"), []byte("kept again"), []byte("put again"), []byte("in use")
	for _, b := range [][]byte{old, kept, reput, used} {
		put(t, s, b)
	}
	c.Set(epoch.Add(2 * time.Hour))
	if err := s.Keep(t.Context(), digestOf(kept)); err != nil {
		t.Fatalf("Keep: %v", err)
	}
	put(t, s, reput)
	res := sweep(t, s, epoch.Add(time.Hour), digestOf(used))
	if res.Scanned != 4 || res.Removed != (blob.Swept{Count: 1, Bytes: int64(len(old))}) {
		t.Fatalf("Sweep = %+v, want 4 scanned and 1 blob of %d bytes removed", res, len(old))
	}
	wantGone(t, s, digestOf(old))
	for _, b := range [][]byte{kept, reput, used} {
		checkContent(t, s, digestOf(b), b)
	}
	// The removed blob can be stored again.
	put(t, s, old)
	checkContent(t, s, digestOf(old), old)
}

// testSweepAtCutoff: a blob made recent exactly at the cutoff stays.
func testSweepAtCutoff(t *testing.T, s blob.Store, c *Clock) {
	data := []byte("at the cutoff")
	put(t, s, data)
	if res := sweep(t, s, epoch); res.Removed.Count != 0 {
		t.Fatalf("Sweep at the blob's own time removed %+v", res.Removed)
	}
	checkContent(t, s, digestOf(data), data)
	if res := sweep(t, s, epoch.Add(time.Nanosecond)); res.Removed.Count != 1 {
		t.Fatalf("Sweep just after it = %+v, want it removed", res)
	}
	wantGone(t, s, digestOf(data))
}

// testSweepKeep: Keep of an absent or malformed digest fails as Stat does.
func testSweepKeep(t *testing.T, s blob.Store, _ *Clock) {
	if err := s.Keep(t.Context(), digestOf([]byte("never stored"))); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Keep of an absent blob: err = %v, want ErrNotFound", err)
	}
	if err := s.Keep(t.Context(), "sha256:../../etc/passwd"); !errors.Is(err, blob.ErrInvalidDigest) {
		t.Fatalf("Keep of a malformed digest: err = %v, want ErrInvalidDigest", err)
	}
}

// testSweepUnusedError: when the referrer check fails, the sweep stops
// with that error and removes nothing.
func testSweepUnusedError(t *testing.T, s blob.Store, c *Clock) {
	data := []byte("cannot tell")
	put(t, s, data)
	c.Set(epoch.Add(2 * time.Hour))
	boom := errors.New("metadata unavailable")
	res, err := s.Sweep(t.Context(), epoch.Add(time.Hour), func(string) (bool, error) { return true, boom })
	if !errors.Is(err, boom) || res.Removed.Count != 0 {
		t.Fatalf("Sweep = %+v, %v; want %v and nothing removed", res, err, boom)
	}
	checkContent(t, s, digestOf(data), data)
}

// testSweepConcurrentWriters races a sweep against writers that store
// again blobs the sweep finds old and unused, then record that they use
// them (as an upload commits its metadata after its Put). Every blob a
// writer recorded must survive: a store that does not hold writers off
// between the referrer check and the removal loses some.
func testSweepConcurrentWriters(t *testing.T, s blob.Store, c *Clock) {
	const n, writers = 200, 4
	data := make([][]byte, n)
	for i := range data {
		data[i] = fmt.Appendf(nil, "blob %d of the race", i)
		put(t, s, data[i])
	}
	c.Set(epoch.Add(2 * time.Hour))

	var recorded sync.Map // digest -> struct{}: the "committed records"
	var wg sync.WaitGroup
	wg.Add(1)
	var res blob.SweepResult
	var sweepErr error
	go func() {
		defer wg.Done()
		res, sweepErr = s.Sweep(t.Context(), epoch.Add(time.Hour), func(d string) (bool, error) {
			_, used := recorded.Load(d)
			// The time a real check takes (a metadata read) before the
			// removal: writers that are not held off get in here.
			time.Sleep(200 * time.Microsecond)
			return !used, nil
		})
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				info, err := s.Put(t.Context(), bytes.NewReader(data[i]), blob.PutOptions{})
				if err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				recorded.Store(info.Digest, struct{}{})
			}
		}()
	}
	wg.Wait()
	if sweepErr != nil {
		t.Fatalf("Sweep: %v", sweepErr)
	}
	for i := range data {
		d := digestOf(data[i])
		if _, ok := recorded.Load(d); !ok {
			continue
		}
		if _, err := s.Stat(t.Context(), d); err != nil {
			t.Fatalf("blob %d was recorded as used but the sweep removed it (%d removed in all): %v", i, res.Removed.Count, err)
		}
		checkContent(t, s, d, data[i])
	}
}
