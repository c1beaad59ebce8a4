package fs_test

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

// TestPutRealDiskFull fills a real (tiny tmpfs) filesystem. It needs root
// and is skipped without it; TestPutDiskFull covers the same without.
func TestPutRealDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	s := newFS(t, dir)
	_, err := s.Put(t.Context(), bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), blob.PutOptions{})
	if !errors.Is(err, blob.ErrNoSpace) {
		t.Fatalf("Put of 1 MiB into 256 KiB: err = %v, want ErrNoSpace", err)
	}
	if names := tmpEntries(t, dir); len(names) != 0 {
		t.Fatalf("tmp/ not empty after a disk-full put: %v", names)
	}
}
