package blobtest

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// DiskFull simulates a filesystem with room for room more bytes: wrap
// a file writer with Wrap and the write that would overflow fails as a
// full disk does (a *os.PathError carrying ENOSPC). The room is shared by
// every wrapped writer and can be changed while in use with SetRoom.
type DiskFull struct {
	room atomic.Int64
}

// NewDiskFull returns a disk with room bytes left.
func NewDiskFull(room int64) *DiskFull {
	d := &DiskFull{}
	d.room.Store(room)
	return d
}

// SetRoom changes what is left.
func (d *DiskFull) SetRoom(n int64) { d.room.Store(n) }

// Wrap is the hook for fs.WithWriter.
func (d *DiskFull) Wrap(w io.Writer) io.Writer { return &fullWriter{w: w, d: d} }

type fullWriter struct {
	w io.Writer
	d *DiskFull
}

func (f *fullWriter) Write(p []byte) (int, error) {
	left := f.d.room.Add(-int64(len(p)))
	if left >= 0 {
		return f.w.Write(p)
	}
	// Write what fits, then fail like write(2) on a full disk.
	fit := max(int64(len(p))+left, 0)
	f.d.room.Store(0)
	n, err := f.w.Write(p[:fit])
	if err != nil {
		return n, err
	}
	name := "file"
	if nf, ok := f.w.(interface{ Name() string }); ok {
		name = nf.Name()
	}
	return n, &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
}
