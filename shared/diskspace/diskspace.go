package diskspace

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// Usage of a filesystem, in bytes.
type Usage struct {
	Free  uint64 // what an unprivileged writer may still use
	Total uint64
}

// StatFunc reads the usage of the filesystem holding dir (Stat; tests
// inject a fake to simulate a nearly full disk).
type StatFunc func(dir string) (Usage, error)

// Reasons the storage of a node is degraded, as the health check names
// them (stable: monitoring matches on them).
const (
	ReasonLow         = "storage_low"          // free space below the minimum
	ReasonWriteFailed = "storage_write_failed" // a write hit a full disk recently
	ReasonUnreadable  = "storage_unreadable"   // free space cannot be read
)

// Config of a Guard.
type Config struct {
	Dir string
	// MinFree is the free space, in bytes, below which uploads are
	// refused; 0 refuses none (a full disk is still reported).
	MinFree int64
	Stat    StatFunc         // nil: Stat
	Now     func() time.Time // nil: time.Now
}

const (
	// cacheFor is how long one statfs answer is used: uploads check on
	// every read of their body.
	cacheFor = time.Second
	// recent is how long a write that hit a full disk keeps the node
	// degraded.
	recent = 5 * time.Minute
)

// Guard refuses uploads while free space is low and reports storage
// health. It is safe for concurrent use.
type Guard struct {
	cfg Config

	mu      sync.Mutex
	usage   Usage
	statErr error
	statAt  time.Time // zero: never read
	fullAt  time.Time // last write that hit a full disk; zero: none
}

// New returns a guard of cfg.Dir's filesystem.
func New(cfg Config) *Guard {
	if cfg.Stat == nil {
		cfg.Stat = Stat
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Guard{cfg: cfg}
}

// read returns the usage, asking the filesystem at most once per cacheFor.
func (g *Guard) read() (Usage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.cfg.Now()
	if g.statAt.IsZero() || now.Sub(g.statAt) >= cacheFor || now.Before(g.statAt) {
		g.usage, g.statErr = g.cfg.Stat(g.cfg.Dir)
		g.statAt = now
	}
	return g.usage, g.statErr
}

// Admit refuses an upload of n bytes (n <= 0: length unknown) with an
// error wrapping blob.ErrNoSpace when free space is below the minimum or
// would be after n more bytes. When free space cannot be read it admits:
// the write itself will tell.
func (g *Guard) Admit(n int64) error {
	if g.cfg.MinFree <= 0 {
		return nil
	}
	u, err := g.read()
	if err != nil {
		return nil
	}
	need := uint64(g.cfg.MinFree) + uint64(max(n, 0))
	if u.Free < need {
		return fmt.Errorf("%w: %d bytes free, %d must stay free, upload of %d bytes", blob.ErrNoSpace, u.Free, g.cfg.MinFree, max(n, 0))
	}
	return nil
}

// Reader returns body checked against the minimum before each read, so
// an upload of unknown (or understated) length stops at the threshold
// instead of filling the disk.
func (g *Guard) Reader(body io.Reader) io.Reader {
	if g.cfg.MinFree <= 0 {
		return body
	}
	return guardedReader{g: g, r: body}
}

type guardedReader struct {
	g *Guard
	r io.Reader
}

func (r guardedReader) Read(p []byte) (int, error) {
	if err := r.g.Admit(0); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Observe notes the outcome of a write: one that hit a full disk keeps
// the node degraded for five minutes.
func (g *Guard) Observe(err error) {
	if !blob.DiskFull(err) {
		return
	}
	g.mu.Lock()
	g.fullAt = g.cfg.Now()
	g.mu.Unlock()
}

// Status is what the health check shows of the storage.
type Status struct {
	Usage
	MinFree int64
	// Reasons the storage is degraded; empty when healthy.
	Reasons []string
}

// Status reads the usage (cached) and says what is wrong, if anything.
func (g *Guard) Status() Status {
	u, err := g.read()
	st := Status{Usage: u, MinFree: g.cfg.MinFree}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// No statfs on this platform: nothing to report.
	case err != nil:
		st.Reasons = append(st.Reasons, ReasonUnreadable)
	case g.cfg.MinFree > 0 && u.Free < uint64(g.cfg.MinFree):
		st.Reasons = append(st.Reasons, ReasonLow)
	}
	g.mu.Lock()
	full := g.fullAt
	g.mu.Unlock()
	if !full.IsZero() && g.cfg.Now().Sub(full) < recent {
		st.Reasons = append(st.Reasons, ReasonWriteFailed)
	}
	return st
}
