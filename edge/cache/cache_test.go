package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/progress"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// origin serves blobs by digest and counts fetches; a blob listed in slow
// is sent in two halves, the second once release is closed.
type origin struct {
	blobs   map[string][]byte
	fetches atomic.Int64
	slow    map[string]chan struct{}
	wrong   map[string][]byte // bytes sent instead of the blob's
	// breakAt: the first fetch of a blob listed breaks after that many
	// bytes; offsets records where each fetch started.
	breakAt map[string]int
	mu      sync.Mutex
	offsets []int64
}

// broken sends n bytes, then fails as a dropped connection does.
type broken struct {
	r io.Reader
}

func (b *broken) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (o *origin) fetch(ctx context.Context, d string, offset int64) (io.ReadCloser, error) {
	o.fetches.Add(1)
	o.mu.Lock()
	o.offsets = append(o.offsets, offset)
	cut, breaks := o.breakAt[d]
	delete(o.breakAt, d)
	o.mu.Unlock()
	b, ok := o.blobs[d]
	if !ok {
		return nil, fmt.Errorf("origin: %s: %w", d, blob.ErrNotFound)
	}
	if w, ok := o.wrong[d]; ok {
		b = w
	}
	b = b[offset:]
	if breaks {
		return io.NopCloser(&broken{bytes.NewReader(b[:cut])}), nil
	}
	release, ok := o.slow[d]
	if !ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		half := len(b) / 2
		_, _ = pw.Write(b[:half])
		<-release
		_, _ = pw.Write(b[half:])
		_ = pw.Close()
	}()
	return pr, nil
}

func newOrigin(blobs ...[]byte) *origin {
	o := &origin{blobs: map[string][]byte{}, slow: map[string]chan struct{}{}, wrong: map[string][]byte{}, breakAt: map[string]int{}}
	for _, b := range blobs {
		o.blobs[digest(b)] = b
	}
	return o
}

func read(t *testing.T, c *cache.Cache, d string) ([]byte, bool) {
	t.Helper()
	r, err := c.Get(t.Context(), d)
	if err != nil {
		t.Fatalf("Get %s: %v", d, err)
	}
	defer r.Close()
	_, hit := r.(*cache.Blob)
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %s: %v", d, err)
	}
	return b, hit
}

// TestMissThenHit: a miss is fetched once, verified and kept; the next Get
// is a file on disk; a reopened cache still has it.
func TestMissThenHit(t *testing.T) {
	data := bytes.Repeat([]byte("layer "), 100000)
	o := newOrigin(data)
	dir := t.TempDir()
	c, err := cache.Open(dir, 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	if b, hit := read(t, c, digest(data)); hit || !bytes.Equal(b, data) {
		t.Fatalf("first Get: hit %v, %d bytes", hit, len(b))
	}
	// The fetch finishes placing the blob after the stream's last byte.
	for !c.Has(digest(data)) {
		time.Sleep(time.Millisecond)
	}
	if b, hit := read(t, c, digest(data)); !hit || !bytes.Equal(b, data) {
		t.Fatalf("second Get: hit %v, %d bytes", hit, len(b))
	}
	if n := o.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	c2, err := cache.Open(dir, 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	if b, hit := read(t, c2, digest(data)); !hit || !bytes.Equal(b, data) {
		t.Fatal("a reopened cache lost the blob")
	}
	if st := c2.Stats(); st.Blobs != 1 || st.Bytes != int64(len(data)) {
		t.Fatalf("stats after reopening = %+v", st)
	}
}

// TestOneFetchManyReaders: readers of a missing blob share one fetch and
// stream it as it arrives, before it is complete.
func TestOneFetchManyReaders(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 1<<20)
	o := newOrigin(data)
	release := make(chan struct{})
	o.slow[digest(data)] = release
	dir := t.TempDir()
	c, err := cache.Open(dir, 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	const readers = 8
	var wg sync.WaitGroup
	firstHalf := make(chan struct{}, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Get(context.Background(), digest(data))
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Close()
			// A quarter: less than the origin has sent (the last byte
			// written is held back until the blob verifies).
			half := make([]byte, len(data)/4)
			if _, err := io.ReadFull(r, half); err != nil {
				t.Error(err)
				return
			}
			firstHalf <- struct{}{} // streamed before the origin sent the rest
			rest, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(append(half, rest...), data) {
				t.Errorf("a reader got %d bytes, err %v", len(half)+len(rest), err)
			}
		}()
	}
	for range readers {
		select {
		case <-firstHalf:
		case <-time.After(10 * time.Second):
			t.Fatal("readers did not stream the first half while the fetch was in progress")
		}
	}
	close(release)
	wg.Wait()
	if n := o.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for %d readers, want 1", n, readers)
	}
	// The readers that made a file for a fetch another had started
	// removed it.
	if left, err := os.ReadDir(filepath.Join(dir, "tmp")); err != nil || len(left) != 0 {
		t.Fatalf("files left in tmp: %v, %v", left, err)
	}
}

// TestWrongBytes: bytes that do not match the digest are never delivered
// whole, end the stream with an error, and are not kept.
func TestWrongBytes(t *testing.T) {
	data := []byte("the real content")
	o := newOrigin(data)
	o.wrong[digest(data)] = []byte("forged content!!")
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get(t.Context(), digest(data))
	if err == nil {
		var got []byte
		got, err = io.ReadAll(r)
		r.Close()
		if len(got) >= len(data) {
			t.Fatalf("a stream delivered all %d bytes of a blob that did not verify", len(got))
		}
	}
	if !errors.Is(err, blob.ErrDigestMismatch) {
		t.Fatalf("err = %v, want ErrDigestMismatch", err)
	}
	if c.Has(digest(data)) {
		t.Fatal("a blob that did not verify was kept")
	}
	// Fixed at the origin: the next Get fetches again and succeeds.
	delete(o.wrong, digest(data))
	if b, _ := read(t, c, digest(data)); !bytes.Equal(b, data) {
		t.Fatalf("after the fix: %q", b)
	}
}

// TestFetchFails: a blob the origin cannot give is an error, and the next
// Get tries again.
func TestFetchFails(t *testing.T) {
	data := []byte("late")
	o := newOrigin()
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get(t.Context(), digest(data))
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	if !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("err = %v, want the origin's not found", err)
	}
	o.blobs[digest(data)] = data
	if b, _ := read(t, c, digest(data)); !bytes.Equal(b, data) {
		t.Fatalf("retry: %q", b)
	}
	if _, err := c.Get(t.Context(), "sha256:../../etc/passwd"); !errors.Is(err, blob.ErrInvalidDigest) {
		t.Fatalf("a malformed digest: err = %v", err)
	}
}

// TestEviction: past the limit, the least recently used unpinned blobs go;
// pinned ones stay whatever their age; an evicted blob's files are closed,
// also the one a reader was reading when it went.
func TestEviction(t *testing.T) {
	var blobs [][]byte
	for i := range 4 {
		blobs = append(blobs, bytes.Repeat([]byte{byte('a' + i)}, 100))
	}
	o := newOrigin(blobs...)
	c, err := cache.Open(t.TempDir(), 250, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	c.Pin([]string{digest(blobs[0])})
	get := func(i int) {
		t.Helper()
		read(t, c, digest(blobs[i]))
		for !c.Has(digest(blobs[i])) {
			time.Sleep(time.Millisecond)
		}
	}
	get(0) // pinned
	get(1)
	get(2)
	// A reader of 2 still reading when it is evicted.
	reading, err := c.Get(t.Context(), digest(blobs[2]))
	if err != nil {
		t.Fatal(err)
	}
	get(1) // now more recent than 2
	get(3) // over the limit: 2 is the least recently used unpinned blob
	want := map[int]bool{0: true, 1: true, 2: false, 3: true}
	for i, in := range want {
		if c.Has(digest(blobs[i])) != in {
			t.Errorf("blob %d cached = %v, want %v", i, !in, in)
		}
	}
	if st := c.Stats(); st.Bytes != 300 || st.Blobs != 3 {
		t.Fatalf("stats = %+v", st)
	}
	// The reader still reads the evicted blob; its file is not kept for
	// reuse when the reader is done, nor are the ones kept before.
	if b, err := io.ReadAll(reading); err != nil || !bytes.Equal(b, blobs[2]) {
		t.Fatalf("the reader of the evicted blob: %v", err)
	}
	if err := reading.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFilesOf(t, digest(blobs[2])); n != 0 {
		t.Fatalf("the evicted blob is still open %d times", n)
	}
}

// openFilesOf counts this process's open files of the blob.
func openFilesOf(t *testing.T, d string) int {
	t.Helper()
	hx := strings.TrimPrefix(d, "sha256:")
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.Contains(target, hx) {
			n++
		}
	}
	return n
}

// TestOpenFilesReused: a cached blob's file is given to one reader at a
// time (each reads it whole from the start, however many read at once)
// and, closed, is kept and given again, rewound, instead of opening
// another.
func TestOpenFilesReused(t *testing.T) {
	data := bytes.Repeat([]byte("reused "), 1000)
	o := newOrigin(data)
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	read(t, c, digest(data))
	for !c.Has(digest(data)) {
		time.Sleep(time.Millisecond)
	}
	var open []io.ReadCloser
	for range 3 {
		r, err := c.Get(t.Context(), digest(data))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, r)
	}
	for i, r := range open {
		half := make([]byte, len(data)/2)
		if _, err := io.ReadFull(r, half); err != nil || !bytes.Equal(half, data[:len(half)]) {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	for _, r := range open {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil { // again: nothing
			t.Fatal(err)
		}
	}
	if n := openFilesOf(t, digest(data)); n != 3 {
		t.Fatalf("%d files kept after three readers closed theirs, want 3", n)
	}
	for i := range 5 {
		if b, hit := read(t, c, digest(data)); !hit || !bytes.Equal(b, data) {
			t.Fatalf("read %d after the files were given back: hit %v, %d bytes", i, hit, len(b))
		}
	}
	if n := openFilesOf(t, digest(data)); n != 3 {
		t.Fatalf("%d files open after five more reads, want the 3 kept (reused, none opened)", n)
	}
}

// TestWrongBytesWhileStreaming: a reader following a fetch of forged
// bytes gets all but the last byte, then an error: never the whole.
func TestWrongBytesWhileStreaming(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1<<16)
	forged := bytes.Repeat([]byte("y"), 1<<16)
	o := newOrigin(data)
	o.wrong[digest(data)] = forged
	release := make(chan struct{})
	o.slow[digest(data)] = release
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get(t.Context(), digest(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := make([]byte, 100)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	close(release)
	rest, err := io.ReadAll(r)
	if got := len(first) + len(rest); got != len(forged)-1 || !errors.Is(err, blob.ErrDigestMismatch) {
		t.Fatalf("streamed %d of %d forged bytes, err %v; want all but the last, then ErrDigestMismatch", got, len(forged), err)
	}
}

// TestPrefetch: the missing blobs are fetched, a few at a time; one the
// origin cannot give stays missing and is counted.
func TestPrefetch(t *testing.T) {
	var blobs [][]byte
	var digests []string
	for i := range 10 {
		b := bytes.Repeat([]byte{byte(i)}, 1000+i)
		blobs, digests = append(blobs, b), append(digests, digest(b))
	}
	o := newOrigin(blobs...)
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	absent := digest([]byte("not at the origin"))
	track := progress.New("prefetch", nil)
	track.Start(0)
	if missing := c.Prefetch(t.Context(), append(digests, absent), 3, track); missing != 1 {
		t.Fatalf("missing after prefetch = %d, want 1", missing)
	}
	track.End()
	for _, d := range digests {
		if !c.Has(d) {
			t.Fatalf("%s not cached", d)
		}
	}
	// Counted as prefetches, not misses; their progress n of N.
	if st := c.Stats(); st.Prefetches != 11 || st.Misses != 0 {
		t.Errorf("prefetches %d, misses %d; want 11, 0", st.Prefetches, st.Misses)
	}
	var size int64
	for _, b := range blobs {
		size += int64(len(b))
	}
	if st := track.Status(); st.Done != 11 || st.Total != 11 || st.Failed != 1 || st.Bytes != size {
		t.Errorf("progress = %+v, want 11 of 11, 1 failed, %d bytes", st, size)
	}
	before := o.fetches.Load()
	if missing := c.Prefetch(t.Context(), digests, 3, nil); missing != 0 || o.fetches.Load() != before {
		t.Fatalf("a second prefetch fetched %d more, missing %d", o.fetches.Load()-before, missing)
	}
}

// TestFetchResumes: a transfer from the origin that breaks part-way is
// resumed from the byte it reached, not started again, and the blob still
// verifies whole.
func TestFetchResumes(t *testing.T) {
	data := bytes.Repeat([]byte("resumable "), 100000)
	o := newOrigin(data)
	o.breakAt[digest(data)] = 300000
	c, err := cache.Open(t.TempDir(), 0, o.fetch)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := read(t, c, digest(data))
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want %d", len(got), len(data))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.offsets) != 2 || o.offsets[0] != 0 || o.offsets[1] != 300000 {
		t.Fatalf("fetches started at %v, want [0 300000]", o.offsets)
	}
	if !c.Has(digest(data)) {
		t.Fatal("the resumed blob was not kept")
	}
}
