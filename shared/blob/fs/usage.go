package fs

import (
	"context"
	"sync"
)

// usage is how many blobs the store holds and their bytes: counted by a
// walk (Count, and each Sweep, which walks every blob anyway) and kept up
// as blobs are placed and removed in between. A blob placed or removed
// while a walk runs may be off by one until the next walk: the figures
// are for metrics, not decisions.
type usage struct {
	mu      sync.Mutex
	counted bool
	blobs   int64
	bytes   int64
}

func (u *usage) add(blobs, bytes int64) {
	u.mu.Lock()
	u.blobs += blobs
	u.bytes += bytes
	u.mu.Unlock()
}

func (u *usage) set(blobs, bytes int64) {
	u.mu.Lock()
	u.counted, u.blobs, u.bytes = true, blobs, bytes
	u.mu.Unlock()
}

// Usage is how many blobs the store holds and their bytes; ok is false
// until a walk (Count or Sweep) counted them.
func (s *FS) Usage() (blobs, bytes int64, ok bool) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	return s.usage.blobs, s.usage.bytes, s.usage.counted
}

// Count walks the store to count its blobs and their bytes (Usage).
func (s *FS) Count(ctx context.Context) error {
	var blobs, bytes int64
	err := s.Walk(ctx, func(_ string, size int64) error {
		blobs++
		bytes += size
		return nil
	})
	if err == nil {
		s.usage.set(blobs, bytes)
	}
	return err
}
