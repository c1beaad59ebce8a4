package cache

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// Open files of cached blobs are kept for reuse: a blob's file is opened
// once and handed to one reader at a time (sendfile moves the file's
// position, so a descriptor is never shared), and given back rewound when
// the reader closes it. A blob asked for again and again costs no open
// and close per request. The descriptors kept are bounded; those of an
// evicted blob are closed (until then they read the same bytes, a blob
// being named by its digest).

const (
	maxOpenFiles    = 512 // descriptors kept in all
	maxOpenFilesPer = 16  // descriptors kept per blob
)

type openFiles struct {
	mu   sync.Mutex
	free map[string][]*os.File // by hex digest
	n    int
}

func (o *openFiles) take(hx string) *os.File {
	o.mu.Lock()
	defer o.mu.Unlock()
	fs := o.free[hx]
	if len(fs) == 0 {
		return nil
	}
	f := fs[len(fs)-1]
	if len(fs) == 1 {
		delete(o.free, hx)
	} else {
		o.free[hx] = fs[:len(fs)-1]
	}
	o.n--
	return f
}

// give keeps f for the next reader of hx, or closes it.
func (o *openFiles) give(hx string, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return f.Close()
	}
	o.mu.Lock()
	if o.n >= maxOpenFiles || len(o.free[hx]) >= maxOpenFilesPer {
		o.mu.Unlock()
		return f.Close()
	}
	if o.free == nil {
		o.free = map[string][]*os.File{}
	}
	o.free[hx] = append(o.free[hx], f)
	o.n++
	o.mu.Unlock()
	return nil
}

// drop closes the files kept for hx (its blob left the cache).
func (o *openFiles) drop(hx string) {
	o.mu.Lock()
	fs := o.free[hx]
	delete(o.free, hx)
	o.n -= len(fs)
	o.mu.Unlock()
	for _, f := range fs {
		_ = f.Close()
	}
}

// Blob is a cached blob opened for one reader: read it, seek in it, or
// let the transport send it with sendfile (SyscallConn); Close gives the
// file back for the next reader.
type Blob struct {
	f      *os.File
	hx     string
	files  *openFiles
	closed bool
}

func (b *Blob) Read(p []byte) (int, error) { return b.f.Read(p) }

// Seek moves the position of the next Read (and of sendfile).
func (b *Blob) Seek(off int64, whence int) (int64, error) { return b.f.Seek(off, whence) }

// SyscallConn lets the network send the file with sendfile.
func (b *Blob) SyscallConn() (syscall.RawConn, error) { return b.f.SyscallConn() }

// Close gives the file back; closing again does nothing.
func (b *Blob) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.files.give(b.hx, b.f)
}
