package blob

import (
	"context"
	"time"
)

// Sweeper is the blob store's part of garbage collection.
//
// The rule that makes a sweep safe against writers: every write that will
// make a record refer to a blob first makes the blob recent. Put and an
// upload's Commit do so themselves, also when the blob was stored
// already; a writer that refers to a stored blob it did not write (an OCI
// cross-repository mount) calls Keep. Sweep removes a blob only when it is
// not recent and unused says so, and holds off every Put, Commit and Keep
// of that digest from its last look at the blob to the removal. So as
// long as no writer takes longer than the grace period (now - cutoff)
// from making a blob recent to committing its record, a sweep never
// removes a blob that a committed record refers to.
type Sweeper interface {
	// Keep makes a stored blob recent, or returns ErrNotFound.
	Keep(ctx context.Context, digest string) error
	// Sweep visits every blob and removes those last made recent before
	// cutoff for which unused reports true; it also removes the store's
	// own leftovers (temp files of failed or crashed writes) older than
	// cutoff. unused is called with the digest's writers held off, so it
	// must not call the store.
	Sweep(ctx context.Context, cutoff time.Time, unused func(digest string) (bool, error)) (SweepResult, error)
}

// Swept counts what a sweep removed (its JSON is that of the cleanup
// answer's parts).
type Swept struct {
	Count int   `json:"removed"`
	Bytes int64 `json:"bytes_freed"`
}

// Add counts one removed item of n bytes.
func (s *Swept) Add(n int64) { s.Count++; s.Bytes += n }

// SweepResult is what a Sweep found and removed.
type SweepResult struct {
	Scanned int   // blobs looked at
	Removed Swept // blobs removed
	Temp    Swept // leftovers removed
}

// SweepTrace observes a sweep as it goes, the way net/http/httptrace
// observes a request: a caller that shows progress puts one in the
// context it passes to Sweep (WithSweepTrace), and stores report to it
// (TraceScanned).
type SweepTrace struct {
	// Scanned is called after each blob the sweep looked at, with its
	// size, from the goroutine that called Sweep.
	Scanned func(size int64)
}

type sweepTraceKey struct{}

// WithSweepTrace returns ctx carrying trace.
func WithSweepTrace(ctx context.Context, trace *SweepTrace) context.Context {
	return context.WithValue(ctx, sweepTraceKey{}, trace)
}

// TraceScanned tells the trace in ctx, if any, that a blob of size bytes
// was looked at.
func TraceScanned(ctx context.Context, size int64) {
	if t, _ := ctx.Value(sweepTraceKey{}).(*SweepTrace); t != nil && t.Scanned != nil {
		t.Scanned(size)
	}
}
