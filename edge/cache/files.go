package cache

import (
	"io"
	"os"
	"syscall"
)

// Open files of cached blobs are kept for reuse: a blob's file is opened
// once and handed to one reader at a time (sendfile moves the file's
// position, so a descriptor is never shared), and given back rewound when
// the reader closes it. A blob asked for again and again costs no open
// and close per request. The spare descriptors are kept on the blob's
// entry, under the cache's lock, so that a blob leaving the cache (evicted
// or forgotten) takes them with it, and one given back after it left is
// closed. They are bounded in all and per blob.

const (
	maxOpenFiles    = 512 // spare descriptors kept in all
	maxOpenFilesPer = 16  // spare descriptors kept per blob
)

// openCached opens a cached blob for one reader, reusing a spare file;
// ok is false when hx is not cached. A file removed from under the cache
// is forgotten (fs.ErrNotExist), to be fetched again.
func (c *Cache) openCached(hx string) (b *Blob, ok bool, err error) {
	c.mu.Lock()
	el, ok := c.byHex[hx]
	if !ok {
		c.mu.Unlock()
		return nil, false, nil
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*entry)
	var f *os.File
	if n := len(e.spare); n > 0 {
		f, e.spare = e.spare[n-1], e.spare[:n-1]
		c.spare--
	}
	c.mu.Unlock()
	if f == nil {
		if f, err = os.Open(c.path(hx)); err != nil {
			return nil, true, err
		}
	}
	return &Blob{f: f, e: e, c: c}, true, nil
}

// giveBack keeps f for the next reader of e's blob while the blob is
// cached and the bounds allow, or closes it.
func (c *Cache) giveBack(e *entry, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return f.Close()
	}
	c.mu.Lock()
	el, cached := c.byHex[e.hex]
	if !cached || el.Value.(*entry) != e || c.spare >= maxOpenFiles || len(e.spare) >= maxOpenFilesPer {
		c.mu.Unlock()
		return f.Close()
	}
	e.spare = append(e.spare, f)
	c.spare++
	c.mu.Unlock()
	return nil
}

// dropSpare takes e's spare files as e leaves the cache; the caller holds
// c.mu and closes them (closeAll) after releasing it.
func (c *Cache) dropSpare(e *entry) []*os.File {
	fs := e.spare
	e.spare = nil
	c.spare -= len(fs)
	return fs
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Blob is a cached blob opened for one reader: read it, seek in it, or
// let the transport send it with sendfile (SyscallConn); Close gives the
// file back for the next reader.
type Blob struct {
	f      *os.File
	e      *entry
	c      *Cache
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
	return b.c.giveBack(b.e, b.f)
}
