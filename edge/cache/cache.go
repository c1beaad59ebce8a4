// Package cache is an edge node's blob cache: blobs by digest on the
// node's disk, each verified against its digest before it is kept, the
// least recently used unpinned ones evicted past a size limit, and one
// fetch from an origin per missing digest however many clients want it,
// streamed to them while it arrives.
//
// A stream never completes with bytes whose digest did not verify: its
// last byte is held back until the whole blob has been checked, and a
// blob that fails the check ends every stream of it with an error (the
// transport aborts the response) and is not kept.
//
// Layout: <dir>/sha256/<2 hex>/<hex> cached blobs; <dir>/tmp/ fetches in
// progress (cleared when the cache is opened).
package cache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/progress"
)

// Fetcher opens a blob at an origin from byte offset on (a fetch that
// broke resumes where it stopped).
type Fetcher func(ctx context.Context, digest string, offset int64) (io.ReadCloser, error)

// fetchAttempts bounds how often one fetch resumes after its connection
// broke.
const fetchAttempts = 5

// FetchTimeout bounds one fetch from an origin.
const FetchTimeout = time.Hour

// Cache is safe for concurrent use.
type Cache struct {
	dir   string
	limit int64
	fetch Fetcher

	mu      sync.Mutex
	lru     list.List                // of *entry; front: most recently used
	byHex   map[string]*list.Element // cached blobs
	used    int64
	pinned  map[string]bool // hex of blobs never evicted
	flights map[string]*flight
	spare   int // open files kept on the entries, in all (files.go)

	hits, misses, prefetches, fetched atomic.Int64
}

type entry struct {
	hex   string
	size  int64
	spare []*os.File // open files for the next readers (files.go)
}

// Open opens (creating it) the cache in dir, holding at most limit bytes
// of unpinned blobs (0: no limit); blobs cached before are kept, the
// least recently modified first in line for eviction.
func Open(dir string, limit int64, fetch Fetcher) (*Cache, error) {
	c := &Cache{dir: dir, limit: limit, fetch: fetch, byHex: map[string]*list.Element{},
		pinned: map[string]bool{}, flights: map[string]*flight{}}
	if err := os.RemoveAll(c.tmp()); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	for _, d := range []string{c.tmp(), filepath.Join(dir, "sha256")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	type found struct {
		entry
		mod time.Time
	}
	var all []found
	err := filepath.WalkDir(filepath.Join(dir, "sha256"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if _, _, err := blob.ParseDigest("sha256:" + d.Name()); err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		all = append(all, found{entry{hex: d.Name(), size: fi.Size()}, fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	slices.SortFunc(all, func(a, b found) int { return a.mod.Compare(b.mod) })
	for _, f := range all {
		c.byHex[f.hex] = c.lru.PushFront(&f.entry)
		c.used += f.size
	}
	return c, nil
}

func (c *Cache) tmp() string { return filepath.Join(c.dir, "tmp") }

func (c *Cache) path(hx string) string { return filepath.Join(c.dir, "sha256", hx[:2], hx) }

// Dir is the directory the blob files are under (see File).
func (c *Cache) Dir() string { return c.dir }

// File is where digest's blob file is under Dir, and the key Hit takes.
func File(digest string) (key, rel string, err error) {
	hx, err := hexOf(digest)
	if err != nil {
		return "", "", err
	}
	return hx, "/sha256/" + hx[:2] + "/" + hx, nil
}

// Hit counts a read of a blob answered from its file without Get (an
// answer the node remembers) and marks it just used, when it is cached;
// false when it is not (any more), and the reader must Get it.
func (c *Cache) Hit(key string) bool {
	c.mu.Lock()
	el, ok := c.byHex[key]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	}
	return ok
}

// hexOf validates a digest; the cache keeps sha256 blobs.
func hexOf(digest string) (string, error) {
	algo, hx, err := blob.ParseDigest(digest)
	if err != nil {
		return "", err
	}
	if algo != "sha256" {
		return "", fmt.Errorf("%w: the cache keeps sha256 blobs", blob.ErrInvalidDigest)
	}
	return hx, nil
}

// Get opens a blob: a cached one as a *Blob (which the transport can send
// with sendfile), a missing one as a stream of the fetch from the origin.
// Close what it returns.
func (c *Cache) Get(ctx context.Context, digest string) (io.ReadCloser, error) {
	return c.get(ctx, digest, &c.misses)
}

// get is Get, counting a fetch it starts or joins in fetches (misses, or
// prefetches).
func (c *Cache) get(ctx context.Context, digest string, fetches *atomic.Int64) (io.ReadCloser, error) {
	hx, err := hexOf(digest)
	if err != nil {
		return nil, err
	}
	for {
		b, cached, err := c.openCached(hx)
		switch {
		case cached && err == nil:
			c.hits.Add(1)
			return b, nil
		case cached && !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("cache: %w", err)
		case cached:
			c.forget(hx) // removed from under us: fetch it again
		}
		fl, placed := c.flight(hx, nil)
		if placed {
			continue
		}
		if fl == nil {
			// The fetch's file is made without the lock: creating a file
			// can take a while (the filesystem finding a free inode), and
			// hits wait for nothing. Another Get may start the same
			// fetch meanwhile; then this file goes.
			f, err := os.CreateTemp(c.tmp(), hx+"-*")
			if err != nil {
				return nil, fmt.Errorf("cache: %w", err)
			}
			if fl, placed = c.flight(hx, f); placed || fl.path != f.Name() {
				f.Close()
				_ = os.Remove(f.Name())
			}
			if placed {
				continue
			}
		}
		fetches.Add(1)
		return fl.reader(ctx)
	}
}

// flight is the fetch of hx under way, started with f when there is
// none and f is not nil; placed when hx has been cached meanwhile (by a
// flight that ended).
func (c *Cache) flight(hx string, f *os.File) (fl *flight, placed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, placed := c.byHex[hx]; placed {
		return nil, true
	}
	if fl = c.flights[hx]; fl == nil && f != nil {
		fl = &flight{c: c, hex: hx, path: f.Name()}
		fl.grew = sync.NewCond(&fl.mu)
		c.flights[hx] = fl
		go fl.run(f)
	}
	return fl, false
}

func (c *Cache) forget(hx string) {
	var spare []*os.File
	c.mu.Lock()
	if el, ok := c.byHex[hx]; ok {
		e := el.Value.(*entry)
		c.used -= e.size
		c.lru.Remove(el)
		delete(c.byHex, hx)
		spare = c.dropSpare(e)
	}
	c.mu.Unlock()
	closeAll(spare)
}

// Has reports whether a blob is cached.
func (c *Cache) Has(digest string) bool {
	hx, err := hexOf(digest)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byHex[hx]
	return ok
}

// Pin keeps exactly these blobs from eviction (the blobs of the node's
// repositories); others pinned before are unpinned.
func (c *Cache) Pin(digests []string) {
	c.pin(digests, true)
	c.evict()
}

// PinMore keeps these blobs from eviction too.
func (c *Cache) PinMore(digests []string) { c.pin(digests, false) }

func (c *Cache) pin(digests []string, replace bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if replace {
		c.pinned = map[string]bool{}
	}
	for _, d := range digests {
		if hx, err := hexOf(d); err == nil {
			c.pinned[hx] = true
		}
	}
}

// Stats are the cache's figures.
type Stats struct {
	Blobs  int   `json:"blobs"`
	Bytes  int64 `json:"bytes"`
	Pinned int   `json:"pinned"` // blobs kept from eviction (prefetched, cached or not yet)
	Hits   int64 `json:"hits"`   // Gets answered from disk
	Misses int64 `json:"misses"` // Gets that needed the origin
	// Prefetches are the fetches Prefetch started ahead of demand.
	Prefetches int64 `json:"prefetches"`
	Fetched    int64 `json:"fetched_bytes"` // bytes fetched and verified
}

// Stats reads the figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Blobs: len(c.byHex), Bytes: c.used, Pinned: len(c.pinned), Hits: c.hits.Load(), Misses: c.misses.Load(),
		Prefetches: c.prefetches.Load(), Fetched: c.fetched.Load()}
}

// keep records a blob just placed, then evicts past the limit.
func (c *Cache) keep(hx string, size int64) {
	c.mu.Lock()
	if _, ok := c.byHex[hx]; !ok {
		c.byHex[hx] = c.lru.PushFront(&entry{hex: hx, size: size})
		c.used += size
	}
	c.mu.Unlock()
	c.fetched.Add(size)
	c.evict()
}

// evict removes least recently used unpinned blobs until the unpinned
// ones fit the limit. A reader that has one open keeps reading it.
func (c *Cache) evict() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	var gone []string
	var spare []*os.File
	var unpinned int64
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); !c.pinned[e.hex] {
			unpinned += e.size
		}
	}
	for el := c.lru.Back(); el != nil && unpinned > c.limit; {
		prev := el.Prev()
		if e := el.Value.(*entry); !c.pinned[e.hex] {
			unpinned -= e.size
			c.used -= e.size
			c.lru.Remove(el)
			delete(c.byHex, e.hex)
			gone = append(gone, e.hex)
			spare = append(spare, c.dropSpare(e)...)
		}
		el = prev
	}
	c.mu.Unlock()
	closeAll(spare)
	for _, hx := range gone {
		_ = os.Remove(c.path(hx))
	}
}

// flight is one fetch of a missing blob into a temp file, which readers
// follow as it grows.
type flight struct {
	c    *Cache
	hex  string
	path string // the temp file

	mu      sync.Mutex
	grew    *sync.Cond
	written int64
	done    bool
	err     error // set when done: the fetch failed or the digest did not match
}

func (fl *flight) run(f *os.File) {
	err := fl.fetch(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fl.place()
	}
	if err != nil {
		_ = os.Remove(fl.path)
	}
	c := fl.c
	if err == nil {
		c.keep(fl.hex, fl.written) // cached before any stream of it ends
	}
	c.mu.Lock()
	delete(c.flights, fl.hex)
	c.mu.Unlock()
	fl.mu.Lock()
	fl.done, fl.err = true, err
	fl.grew.Broadcast()
	fl.mu.Unlock()
}

// fetch copies the blob from the origin into f, hashing as it goes, and
// checks the digest. A transfer that breaks resumes from the byte it
// reached (a Range request), a few times, with a pause between.
func (fl *flight) fetch(f *os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	h := sha256.New()
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	for attempt := 1; ; attempt++ {
		err := fl.copyFrom(ctx, f, h, *buf)
		if err == nil {
			break
		}
		var broke *brokenError
		if !errors.As(err, &broke) || attempt == fetchAttempts || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != fl.hex {
		return fmt.Errorf("%w: the origin sent sha256:%s for sha256:%s", blob.ErrDigestMismatch, got, fl.hex)
	}
	return f.Sync()
}

// buffers are the fetches' copy buffers: one per fetch running, not one
// per miss for the collector to clear away.
var buffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// brokenError is a transfer that broke after it started: it may resume.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// copyFrom fetches the blob from the offset written so far to its end.
func (fl *flight) copyFrom(ctx context.Context, f *os.File, h hash.Hash, buf []byte) error {
	fl.mu.Lock()
	offset := fl.written
	fl.mu.Unlock()
	body, err := fl.c.fetch(ctx, "sha256:"+fl.hex, offset)
	if err != nil {
		if offset > 0 {
			err = &brokenError{err}
		}
		return err
	}
	defer body.Close()
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return fmt.Errorf("cache: %w", blob.NoSpace(err))
			}
			h.Write(buf[:n])
			fl.mu.Lock()
			fl.written += int64(n)
			fl.grew.Broadcast()
			fl.mu.Unlock()
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return &brokenError{fmt.Errorf("cache: fetching sha256:%s: %w", fl.hex, rerr)}
		}
	}
}

// place moves the verified temp file into the cache.
func (fl *flight) place() error {
	final := fl.c.path(fl.hex)
	if err := os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(fl.path, final); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// reader follows the flight from the start of the blob.
func (fl *flight) reader(ctx context.Context) (io.ReadCloser, error) {
	f, err := os.Open(fl.path)
	if err != nil {
		// Placed (or failed) between the lookup and now.
		fl.mu.Lock()
		for !fl.done {
			fl.grew.Wait()
		}
		ferr := fl.err
		fl.mu.Unlock()
		if ferr != nil {
			return nil, ferr
		}
		if b, cached, err := fl.c.openCached(fl.hex); cached {
			return b, err
		}
		return os.Open(fl.c.path(fl.hex)) // evicted meanwhile: the file, if it is still there
	}
	st := &stream{fl: fl, f: f, ctx: ctx}
	// A reader waiting for bytes wakes when its request ends.
	st.stop = context.AfterFunc(ctx, func() {
		fl.mu.Lock()
		fl.grew.Broadcast()
		fl.mu.Unlock()
	})
	return st, nil
}

// stream reads a blob while its flight writes it. Until the flight has
// verified the blob, the last byte written is held back, so a stream
// never ends successfully with bytes that did not verify.
type stream struct {
	fl   *flight
	f    *os.File
	ctx  context.Context
	stop func() bool
	off  int64
}

func (s *stream) Read(p []byte) (int, error) {
	fl := s.fl
	fl.mu.Lock()
	for {
		readable := fl.written
		if !fl.done || fl.err != nil {
			readable--
		}
		switch {
		case s.off < readable:
			fl.mu.Unlock()
			n, err := s.f.ReadAt(p[:min(int64(len(p)), readable-s.off)], s.off)
			s.off += int64(n)
			if err == io.EOF && n > 0 {
				err = nil
			}
			return n, err
		case fl.done && fl.err != nil:
			fl.mu.Unlock()
			return 0, fl.err
		case fl.done:
			fl.mu.Unlock()
			return 0, io.EOF
		case s.ctx.Err() != nil:
			fl.mu.Unlock()
			return 0, s.ctx.Err()
		}
		fl.grew.Wait()
	}
}

func (s *stream) Close() error {
	s.stop()
	return s.f.Close()
}

// Prefetch fetches the blobs of digests that are not cached, at most
// parallel at a time, and returns how many are still missing (a fetch
// that failed is tried again next time: nothing half-fetched is kept).
// Its fetches count as prefetches, not misses; track (nil: none) grows
// by the blobs it has to fetch and hears of each one fetched or failed.
func (c *Cache) Prefetch(ctx context.Context, digests []string, parallel int, track *progress.Tracker) int {
	var todo []string
	for _, d := range digests {
		if !c.Has(d) {
			todo = append(todo, d)
		}
	}
	track.Grow(int64(len(todo)))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, d := range todo {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := c.get(ctx, d, &c.prefetches)
			if err != nil {
				track.Add(1, 1, 0)
				return
			}
			n, err := io.Copy(io.Discard, r)
			r.Close()
			if err != nil {
				track.Add(1, 1, 0)
				return
			}
			track.Add(1, 0, n)
		})
	}
	wg.Wait()
	missing := 0
	for _, d := range digests {
		if !c.Has(d) {
			missing++
		}
	}
	return missing
}
