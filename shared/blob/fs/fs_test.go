package fs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/fs"
)

func newFS(t *testing.T, dir string) *fs.FS {
	t.Helper()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatalf("New(%s): %v", dir, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return newFS(t, t.TempDir())
	})
}

func tmpEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestNoTmpLeftoversAfterFailedPuts(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	data := bytes.Repeat([]byte("x"), 1<<20)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	failures := []struct {
		name string
		ctx  context.Context
		opts blob.PutOptions
	}{
		{"too large", t.Context(), blob.PutOptions{MaxSize: 10}},
		{"mismatch", t.Context(), blob.PutOptions{Expect: blob.Checksums{SHA1: strings.Repeat("0", 40)}}},
		{"cancelled", cancelled, blob.PutOptions{}},
		{"negative max", t.Context(), blob.PutOptions{MaxSize: -1}},
	}
	for _, f := range failures {
		if _, err := s.Put(f.ctx, bytes.NewReader(data), f.opts); err == nil {
			t.Errorf("%s: Put succeeded", f.name)
		}
	}
	if _, err := s.Put(t.Context(), errReader{}, blob.PutOptions{}); err == nil {
		t.Error("read error: Put succeeded")
	}
	if names := tmpEntries(t, dir); len(names) != 0 {
		t.Fatalf("tmp/ not empty after failed puts: %v", names)
	}

	// Successful and deduplicated puts leave nothing behind either.
	for range 2 {
		if _, err := s.Put(t.Context(), bytes.NewReader(data), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if names := tmpEntries(t, dir); len(names) != 0 {
		t.Fatalf("tmp/ not empty after successful puts: %v", names)
	}
}

func TestNewRemovesStaleTmp(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	info, err := s.Put(t.Context(), strings.NewReader("survivor"), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Simulate a crash mid-upload.
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(filepath.Join(tmp, "put-123"), []byte("half"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "junkdir", "deeper"), 0o750); err != nil {
		t.Fatal(err)
	}

	s = newFS(t, dir)
	if names := tmpEntries(t, dir); len(names) != 0 {
		t.Fatalf("tmp/ not cleaned by New: %v", names)
	}
	if size, err := s.Stat(t.Context(), info.Digest); err != nil || size != info.Size {
		t.Fatalf("stored blob lost by New: size %d, err %v", size, err)
	}
}

func TestLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store") // New must create it
	s := newFS(t, dir)
	info, err := s.Put(t.Context(), strings.NewReader("layout"), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hx := strings.TrimPrefix(info.Digest, "sha256:")
	p := filepath.Join(dir, "sha256", hx[:2], hx)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("blob not at documented path: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Errorf("blob mode = %o, want 640", got)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "layout" {
		t.Fatalf("file content = %q, %v", got, err)
	}
	// Dirs are created 0o750; the umask may only remove bits.
	for _, d := range []string{dir, filepath.Join(dir, "sha256"), filepath.Join(dir, "sha256", hx[:2]), filepath.Join(dir, "tmp"), filepath.Join(dir, "uploads")} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&^0o750 != 0 {
			t.Errorf("%s mode = %o, want at most 750", d, perm)
		}
	}
}

func TestWalkSkipsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	info, err := s.Put(t.Context(), strings.NewReader("real"), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hx := strings.TrimPrefix(info.Digest, "sha256:")
	shard := filepath.Join(dir, "sha256", hx[:2])
	other := "ff" + hx[2:]
	if other == hx {
		other = "00" + hx[2:]
	}
	for _, p := range []string{
		filepath.Join(shard, ".DS_Store"),
		filepath.Join(shard, strings.ToUpper(hx)),
		filepath.Join(shard, other), // valid name in the wrong shard
		filepath.Join(dir, "sha256", "README"),
	} {
		if err := os.WriteFile(p, []byte("junk"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	if err := s.Walk(t.Context(), func(d string, _ int64) error {
		seen = append(seen, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != info.Digest {
		t.Fatalf("Walk = %v, want only %s", seen, info.Digest)
	}
}

func TestSHA512DigestNotAddressed(t *testing.T) {
	s := newFS(t, t.TempDir())
	info, err := s.Put(t.Context(), strings.NewReader("x"), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := "sha512:" + info.Checksums.SHA512
	if _, err := s.Open(t.Context(), d); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open(sha512 digest): err = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(t.Context(), d); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat(sha512 digest): err = %v, want ErrNotFound", err)
	}
}

func TestExpectIgnoresHexCase(t *testing.T) {
	s := newFS(t, t.TempDir())
	want := "da39a3ee5e6b4b0d3255bfef95601890afd80709" // sha1 of ""
	info, err := s.Put(t.Context(), strings.NewReader(""), blob.PutOptions{Expect: blob.Checksums{SHA1: strings.ToUpper(want)}})
	if err != nil {
		t.Fatal(err)
	}
	if info.Checksums.SHA1 != want {
		t.Fatalf("SHA1 = %s, want lowercase %s", info.Checksums.SHA1, want)
	}
}

func TestNewEmptyDir(t *testing.T) {
	if _, err := fs.New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
}

// TestPutDiskFull: a write that hits ENOSPC fails the Put with
// blob.ErrNoSpace (the cause kept), and leaves neither a blob nor a temp
// file behind.
func TestPutDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := blobtest.NewDiskFull(100 << 10)
	s, err := fs.New(dir, fs.WithWriter(disk.Wrap))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(t.Context(), bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), blob.PutOptions{})
	if !errors.Is(err, blob.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put on a full disk: err = %v, want ErrNoSpace wrapping ENOSPC", err)
	}
	if names := tmpEntries(t, dir); len(names) != 0 {
		t.Fatalf("tmp/ not empty after a disk-full put: %v", names)
	}
	if err := s.Walk(t.Context(), func(d string, _ int64) error { return fmt.Errorf("blob %s stored", d) }); err != nil {
		t.Fatal(err)
	}

	// Once there is room again, the same store works.
	disk.SetRoom(2 << 20)
	if _, err := s.Put(t.Context(), strings.NewReader("fits"), blob.PutOptions{}); err != nil {
		t.Fatalf("Put with room: %v", err)
	}
}

func TestSweeper(t *testing.T) {
	blobtest.RunSweeper(t, func(t *testing.T, now func() time.Time) blob.Store {
		s, err := fs.New(t.TempDir(), fs.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestUsage: the blob count and bytes a walk counted are kept up by
// puts (a blob stored twice counts once), deletes and sweeps.
func TestUsage(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := newFS(t, dir)
	a, _ := s.Put(ctx, strings.NewReader("aaaa"), blob.PutOptions{})
	if _, _, ok := s.Usage(); ok {
		t.Fatal("Usage is known before any walk")
	}
	s = newFS(t, dir) // a restart: counted by a walk
	if err := s.Count(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string, blobs, bytes int64) {
		t.Helper()
		if n, b, ok := s.Usage(); !ok || n != blobs || b != bytes {
			t.Errorf("%s: Usage = %d blobs, %d bytes (%v), want %d, %d", what, n, b, ok, blobs, bytes)
		}
	}
	check("counted", 1, 4)
	if _, err := s.Put(ctx, strings.NewReader("bbbbbb"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, strings.NewReader("aaaa"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after puts", 2, 10)
	if err := s.Delete(ctx, a.Digest); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, a.Digest); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	check("after a delete", 1, 6)
	if _, err := s.Sweep(ctx, time.Now().Add(time.Hour), func(string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	check("after a sweep", 0, 0)
}
