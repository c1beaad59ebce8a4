package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// A blob's mtime says when it was last made recent (blob.Sweeper): place
// stamps it on every Put and Commit, Keep on demand, both under the
// digest's lock, which a sweep holds from its last look at the file to
// the removal.

var _ blob.Sweeper = (*FS)(nil)

// lock is the stripe of the blob with sha256 hex hx (validated).
func (s *FS) lock(hx string) *sync.Mutex {
	b, _ := strconv.ParseUint(hx[:2], 16, 8)
	return &s.locks[b]
}

// Keep implements blob.Sweeper.
func (s *FS) Keep(ctx context.Context, digest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.path(digest)
	if err != nil {
		return err
	}
	mu := s.lock(filepath.Base(p))
	mu.Lock()
	defer mu.Unlock()
	now := s.now()
	if err := os.Chtimes(p, now, now); err != nil {
		return notFound(err, digest)
	}
	return nil
}

// Sweep implements blob.Sweeper.
func (s *FS) Sweep(ctx context.Context, cutoff time.Time, unused func(digest string) (bool, error)) (blob.SweepResult, error) {
	var res blob.SweepResult
	var kept, keptBytes int64
	err := s.walk(ctx, func(digest, path string, fi fs.FileInfo) error {
		res.Scanned++
		defer blob.TraceScanned(ctx, fi.Size())
		if !fi.ModTime().Before(cutoff) {
			kept, keptBytes = kept+1, keptBytes+fi.Size()
			return nil
		}
		n, removed, err := s.sweepBlob(digest, path, cutoff, unused)
		if removed {
			res.Removed.Add(n)
		} else if err == nil {
			kept, keptBytes = kept+1, keptBytes+fi.Size()
		}
		return err
	})
	if err != nil {
		return res, err
	}
	s.usage.set(kept, keptBytes)
	// Temp files carry the kernel's times, not the store's clock: the
	// same grace, measured on the wall clock.
	res.Temp, err = s.sweepTemp(ctx, time.Now().Add(cutoff.Sub(s.now())))
	return res, err
}

// sweepBlob removes one blob if, under its lock, it is still old and
// unused.
func (s *FS) sweepBlob(digest, path string, cutoff time.Time, unused func(string) (bool, error)) (int64, bool, error) {
	mu := s.lock(filepath.Base(path))
	mu.Lock()
	defer mu.Unlock()
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("blob/fs: %w", err)
	case !fi.ModTime().Before(cutoff):
		return 0, false, nil // made recent meanwhile
	}
	drop, err := unused(digest)
	if err != nil || !drop {
		return 0, false, err
	}
	if err := os.Remove(path); err != nil {
		return 0, false, fmt.Errorf("blob/fs: %w", err)
	}
	s.usage.add(-1, -fi.Size())
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fi.Size(), true, fmt.Errorf("blob/fs: %w", err)
	}
	return fi.Size(), true, nil
}

// sweepTemp removes what tmp/ holds from before cutoff: a write in
// progress keeps its file's mtime fresh, so anything older is left over
// from a write whose cleanup failed.
func (s *FS) sweepTemp(ctx context.Context, cutoff time.Time) (blob.Swept, error) {
	var swept blob.Swept
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return swept, fmt.Errorf("blob/fs: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return swept, err
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue // gone meanwhile, or recent
		}
		p := filepath.Join(s.tmp, e.Name())
		n := diskUsage(p)
		if err := os.RemoveAll(p); err != nil {
			return swept, fmt.Errorf("blob/fs: %w", err)
		}
		swept.Add(n)
	}
	return swept, nil
}

// diskUsage is the size of the regular files under p (p included).
func diskUsage(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
