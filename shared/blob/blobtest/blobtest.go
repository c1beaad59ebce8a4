// Package blobtest is a conformance suite for blob.Store implementations.
package blobtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

// Run checks that stores produced by newStore behave as blob.Store
// requires. newStore is called once per subtest and must return an empty
// store; cleanup is up to it (e.g. via t.TempDir or t.Cleanup).
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Dedupe", testDedupe},
		{"TooLarge", testTooLarge},
		{"ExpectMismatch", testExpectMismatch},
		{"ExpectMatch", testExpectMatch},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"InvalidDigest", testInvalidDigest},
		{"CancelledBeforePut", testCancelledBeforePut},
		{"CancelledDuringPut", testCancelledDuringPut},
		{"ReadError", testReadError},
		{"Empty", testEmpty},
		{"Large", testLarge},
		{"ReadAtSeek", testReadAtSeek},
		{"WalkStops", testWalkStops},
		{"ConcurrentSamePut", testConcurrentSamePut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func sums(data []byte) blob.Checksums {
	m, s1, s256, s512 := md5.Sum(data), sha1.Sum(data), sha256.Sum256(data), sha512.Sum512(data)
	return blob.Checksums{
		MD5:    hex.EncodeToString(m[:]),
		SHA1:   hex.EncodeToString(s1[:]),
		SHA256: hex.EncodeToString(s256[:]),
		SHA512: hex.EncodeToString(s512[:]),
	}
}

func digestOf(data []byte) string {
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func put(t *testing.T, s blob.Store, data []byte) blob.Info {
	t.Helper()
	info, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	checkInfo(t, info, data)
	return info
}

func checkInfo(t *testing.T, info blob.Info, data []byte) {
	t.Helper()
	want := blob.Info{Digest: digestOf(data), Size: int64(len(data)), Checksums: sums(data)}
	if info != want {
		t.Fatalf("Put info = %+v, want %+v", info, want)
	}
}

// checkContent reads the blob back through Open and Stat.
func checkContent(t *testing.T, s blob.Store, digest string, data []byte) {
	t.Helper()
	size, err := s.Stat(t.Context(), digest)
	if err != nil {
		t.Fatalf("Stat(%s): %v", digest, err)
	}
	if size != int64(len(data)) {
		t.Fatalf("Stat size = %d, want %d", size, len(data))
	}
	f, err := s.Open(t.Context(), digest)
	if err != nil {
		t.Fatalf("Open(%s): %v", digest, err)
	}
	defer f.Close()
	if f.Size() != int64(len(data)) {
		t.Fatalf("File.Size = %d, want %d", f.Size(), len(data))
	}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("content differs: got %d bytes, want %d", len(got), len(data))
	}
}

func walkAll(t *testing.T, s blob.Store) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	err := s.Walk(t.Context(), func(d string, size int64) error {
		if _, ok := m[d]; ok {
			t.Errorf("Walk visited %s twice", d)
		}
		m[d] = size
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return m
}

func checkEmpty(t *testing.T, s blob.Store) {
	t.Helper()
	if m := walkAll(t, s); len(m) != 0 {
		t.Fatalf("store should be empty, Walk found %v", m)
	}
}

func testRoundTrip(t *testing.T, s blob.Store) {
	data := []byte("hello, registry\n")
	info := put(t, s, data)
	checkContent(t, s, info.Digest, data)
	m := walkAll(t, s)
	if len(m) != 1 || m[info.Digest] != int64(len(data)) {
		t.Fatalf("Walk = %v, want only %s", m, info.Digest)
	}
}

func testDedupe(t *testing.T, s blob.Store) {
	data := []byte("same bytes")
	a := put(t, s, data)
	b := put(t, s, data)
	if a != b {
		t.Fatalf("two puts of the same bytes differ: %+v vs %+v", a, b)
	}
	if m := walkAll(t, s); len(m) != 1 {
		t.Fatalf("Walk = %v, want one blob", m)
	}
	put(t, s, []byte("other bytes"))
	if m := walkAll(t, s); len(m) != 2 {
		t.Fatalf("Walk = %v, want two blobs", m)
	}
	checkContent(t, s, a.Digest, data)
}

// endless yields zeros forever, but fails after a generous bound so a
// store that ignores MaxSize or cancellation fails instead of hanging.
type endless struct {
	n, limit int64
	onRead   func()
}

func (e *endless) Read(p []byte) (int, error) {
	if e.onRead != nil {
		e.onRead()
	}
	if e.n >= e.limit {
		return 0, errors.New("blobtest: store kept reading past the point it should have stopped")
	}
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

func testTooLarge(t *testing.T, s blob.Store) {
	data := randomBytes(t, 100)
	_, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{MaxSize: 99})
	if !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Put over MaxSize: err = %v, want ErrTooLarge", err)
	}
	checkEmpty(t, s)
	if _, err := s.Stat(t.Context(), digestOf(data)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat after too large put: err = %v, want ErrNotFound", err)
	}

	// The limit must stop reading early, not after draining the body.
	_, err = s.Put(t.Context(), &endless{limit: 64 << 20}, blob.PutOptions{MaxSize: 1 << 10})
	if !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Put of endless reader: err = %v, want ErrTooLarge", err)
	}
	checkEmpty(t, s)

	// Exactly MaxSize bytes is allowed.
	info, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{MaxSize: 100})
	if err != nil {
		t.Fatalf("Put of exactly MaxSize: %v", err)
	}
	checkInfo(t, info, data)
}

func testExpectMismatch(t *testing.T, s blob.Store) {
	data := []byte("expected content")
	other := sums([]byte("something else"))
	cases := map[string]blob.Checksums{
		"md5":    {MD5: other.MD5},
		"sha1":   {SHA1: other.SHA1},
		"sha256": {SHA256: other.SHA256},
		"sha512": {SHA512: other.SHA512},
		"one of many": func() blob.Checksums {
			c := sums(data)
			c.SHA1 = other.SHA1
			return c
		}(),
	}
	for name, expect := range cases {
		_, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{Expect: expect})
		if !errors.Is(err, blob.ErrDigestMismatch) {
			t.Errorf("%s: err = %v, want ErrDigestMismatch", name, err)
		}
	}
	checkEmpty(t, s)
}

func testExpectMatch(t *testing.T, s blob.Store) {
	data := []byte("expected content")
	all := sums(data)
	for _, expect := range []blob.Checksums{all, {SHA256: all.SHA256}, {MD5: all.MD5}, {SHA1: all.SHA1}, {SHA512: all.SHA512}} {
		info, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{Expect: expect})
		if err != nil {
			t.Fatalf("Put with Expect %+v: %v", expect, err)
		}
		checkInfo(t, info, data)
	}
	checkContent(t, s, digestOf(data), data)
}

func testNotFound(t *testing.T, s blob.Store) {
	put(t, s, []byte("present"))
	absent := digestOf([]byte("absent"))
	if _, err := s.Open(t.Context(), absent); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open absent: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(t.Context(), absent); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat absent: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), absent); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Delete absent: err = %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, s blob.Store) {
	keep := put(t, s, []byte("keep"))
	gone := put(t, s, []byte("gone"))
	if err := s.Delete(t.Context(), gone.Digest); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(t.Context(), gone.Digest); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat after Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), gone.Digest); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("second Delete: err = %v, want ErrNotFound", err)
	}
	m := walkAll(t, s)
	if len(m) != 1 || m[keep.Digest] != keep.Size {
		t.Fatalf("Walk after Delete = %v, want only %s", m, keep.Digest)
	}
	// A deleted blob can be stored again.
	put(t, s, []byte("gone"))
	checkContent(t, s, gone.Digest, []byte("gone"))
}

func testInvalidDigest(t *testing.T, s blob.Store) {
	info := put(t, s, []byte("victim"))
	hx := strings.TrimPrefix(info.Digest, "sha256:")
	bad := []string{
		"",
		"sha256:",
		"sha256",
		":" + hx,
		"../../etc/passwd",
		"sha256:../../../../etc/passwd",
		"sha256:" + hx[:2] + "/../" + hx[6:],
		"sha256:xyz",
		"sha256:" + strings.ToUpper(hx),
		"sha256:" + hx + "0",
		"sha256:" + hx[:63],
		"sha256:" + hx + "\x00",
		"SHA256:" + hx,
		" sha256:" + hx,
		"md5:d41d8cd98f00b204e9800998ecf8427e",
		"sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
		hx,
	}
	for _, d := range bad {
		if _, err := s.Open(t.Context(), d); !errors.Is(err, blob.ErrInvalidDigest) {
			t.Errorf("Open(%q): err = %v, want ErrInvalidDigest", d, err)
		}
		if _, err := s.Stat(t.Context(), d); !errors.Is(err, blob.ErrInvalidDigest) {
			t.Errorf("Stat(%q): err = %v, want ErrInvalidDigest", d, err)
		}
		if err := s.Delete(t.Context(), d); !errors.Is(err, blob.ErrInvalidDigest) {
			t.Errorf("Delete(%q): err = %v, want ErrInvalidDigest", d, err)
		}
	}
	checkContent(t, s, info.Digest, []byte("victim"))
}

func testCancelledBeforePut(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, bytes.NewReader([]byte("never")), blob.PutOptions{}); err == nil {
		t.Fatal("Put with cancelled ctx succeeded")
	}
	checkEmpty(t, s)
}

func testCancelledDuringPut(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &endless{limit: 64 << 20, onRead: cancel}
	_, err := s.Put(ctx, r, blob.PutOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled mid-stream: err = %v, want context.Canceled", err)
	}
	checkEmpty(t, s)
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func testReadError(t *testing.T, s blob.Store) {
	boom := errors.New("boom")
	_, err := s.Put(t.Context(), &failingReader{data: randomBytes(t, 100<<10), err: boom}, blob.PutOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("Put with failing reader: err = %v, want it to wrap %v", err, boom)
	}
	checkEmpty(t, s)
}

func testEmpty(t *testing.T, s blob.Store) {
	info := put(t, s, nil)
	const emptySHA256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if info.Digest != emptySHA256 {
		t.Fatalf("empty digest = %s", info.Digest)
	}
	checkContent(t, s, info.Digest, nil)
	if m := walkAll(t, s); len(m) != 1 || m[emptySHA256] != 0 {
		t.Fatalf("Walk = %v, want only the empty blob", m)
	}
}

func testLarge(t *testing.T, s blob.Store) {
	data := randomBytes(t, 5<<20)
	info := put(t, s, data)
	checkContent(t, s, info.Digest, data)
}

func testReadAtSeek(t *testing.T, s blob.Store) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info := put(t, s, data)
	f, err := s.Open(t.Context(), info.Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	buf := make([]byte, 10)
	if n, err := f.ReadAt(buf, 500); n != 10 || err != nil || !bytes.Equal(buf, data[500:510]) {
		t.Fatalf("ReadAt(500) = %d, %v, %v", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 995); n != 5 || !errors.Is(err, io.EOF) || !bytes.Equal(buf[:5], data[995:]) {
		t.Fatalf("ReadAt(995) = %d, %v; want 5, io.EOF", n, err)
	}

	seek := func(off int64, whence int, want int64) {
		t.Helper()
		pos, err := f.Seek(off, whence)
		if err != nil || pos != want {
			t.Fatalf("Seek(%d, %d) = %d, %v; want %d", off, whence, pos, err, want)
		}
	}
	seek(100, io.SeekStart, 100)
	if _, err := io.ReadFull(f, buf); err != nil || !bytes.Equal(buf, data[100:110]) {
		t.Fatalf("read after seek: %v", err)
	}
	seek(0, io.SeekCurrent, 110)
	seek(-4, io.SeekEnd, 996)
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(rest, data[996:]) {
		t.Fatalf("read to end after SeekEnd: %v, %v", rest, err)
	}
	// ReadAt must not move the read offset.
	seek(0, io.SeekStart, 0)
	if _, err := f.ReadAt(buf, 900); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f, buf); err != nil || !bytes.Equal(buf, data[:10]) {
		t.Fatalf("ReadAt moved the offset: %v", err)
	}
}

func testWalkStops(t *testing.T, s blob.Store) {
	put(t, s, []byte("one"))
	put(t, s, []byte("two"))
	stop := errors.New("stop")
	calls := 0
	err := s.Walk(t.Context(), func(string, int64) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Walk = %v after %d calls, want stop after 1", err, calls)
	}
}

// storeAtOnce runs n stores of data at the same moment (do(i) stores the
// i-th) and checks every one answered data's info and that one blob holds
// it.
func storeAtOnce(t *testing.T, s blob.Store, data []byte, n int, do func(i int) (blob.Info, error)) {
	t.Helper()
	infos := make([]blob.Info, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			infos[i], errs[i] = do(i)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("store %d: %v", i, errs[i])
		}
		checkInfo(t, infos[i], data)
	}
	if m := walkAll(t, s); len(m) != 1 {
		t.Fatalf("Walk = %v, want one blob", m)
	}
	checkContent(t, s, digestOf(data), data)
}

func testConcurrentSamePut(t *testing.T, s blob.Store) {
	data := randomBytes(t, 1<<20)
	storeAtOnce(t, s, data, 8, func(int) (blob.Info, error) {
		return s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{})
	})
}
