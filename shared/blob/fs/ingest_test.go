package fs_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/fs"
)

func TestIngester(t *testing.T) {
	blobtest.RunIngester(t, func(t *testing.T) (blobtest.IngestStore, func() blobtest.IngestStore) {
		dir := t.TempDir()
		return newFS(t, dir), func() blobtest.IngestStore { return newFS(t, dir) }
	})
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func uploadFile(dir string, u blob.Upload, name string) string {
	return filepath.Join(dir, "uploads", u.ID(), name)
}

func newUpload(t *testing.T, s *fs.FS, data []byte) blob.Upload {
	t.Helper()
	u, err := s.Create(t.Context(), []byte("label"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Append(t.Context(), bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUploadLayout: an upload is a directory under uploads/ until its
// commit moves the data into the blob tree, with the blob's mode, and
// leaves nothing behind.
func TestUploadLayout(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	data := []byte("layered")
	u := newUpload(t, s, data)
	if got, err := os.ReadFile(uploadFile(dir, u, "data")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("upload data = %q, %v", got, err)
	}
	if _, err := u.Commit(t.Context(), blob.Checksums{SHA256: sha(data)}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sha256", sha(data)[:2], sha(data))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("committed blob not at its path: %v", err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("committed blob mode = %o, want 640", fi.Mode().Perm())
	}
	for _, sub := range []string{"uploads", "tmp"} {
		if entries, err := os.ReadDir(filepath.Join(dir, sub)); err != nil || len(entries) != 0 {
			t.Errorf("%s/ after commit: %v, %v", sub, entries, err)
		}
	}
	c := newUpload(t, s, data)
	if err := c.Cancel(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"uploads", "tmp"} {
		if entries, err := os.ReadDir(filepath.Join(dir, sub)); err != nil || len(entries) != 0 {
			t.Errorf("%s/ after cancel: %v, %v", sub, entries, err)
		}
	}
}

// TestCommitDoesNotReadData: with a current hash state neither Resume nor
// Commit reads the data. The data file is replaced by other bytes of the
// same length behind the store's back: the commit still reports the
// checksums of what was appended.
func TestCommitDoesNotReadData(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	data := []byte("appended through the ingester")
	u := newUpload(t, s, data)
	forged := bytes.Repeat([]byte("X"), len(data))
	if err := os.WriteFile(uploadFile(dir, u, "data"), forged, 0o640); err != nil {
		t.Fatal(err)
	}
	r, err := newFS(t, dir).Resume(t.Context(), u.ID())
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Commit(t.Context(), blob.Checksums{SHA256: sha(data)})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if info.Digest != "sha256:"+sha(data) {
		t.Fatalf("Commit digest %s: the data was read again", info.Digest)
	}
}

// TestResumeRehashes: a state that does not describe the data (a crash
// between writing the data and the state, a damaged state file) is
// rebuilt from the data.
func TestResumeRehashes(t *testing.T) {
	head, tail := []byte("acknowledged "), []byte("written before the crash")
	all := append(bytes.Clone(head), tail...)
	cases := map[string]func(t *testing.T, dir string, u blob.Upload){
		"data longer than state": func(t *testing.T, dir string, u blob.Upload) {
			f, err := os.OpenFile(uploadFile(dir, u, "data"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(tail); err != nil {
				t.Fatal(err)
			}
		},
		"state missing": func(t *testing.T, dir string, u blob.Upload) {
			if err := os.WriteFile(uploadFile(dir, u, "data"), all, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(uploadFile(dir, u, "state")); err != nil {
				t.Fatal(err)
			}
		},
		"state damaged": func(t *testing.T, dir string, u blob.Upload) {
			if err := os.WriteFile(uploadFile(dir, u, "data"), all, 0o640); err != nil {
				t.Fatal(err)
			}
			state := fmt.Sprintf(`{"size":%d,"hash":"AAAA"}`, len(all))
			if err := os.WriteFile(uploadFile(dir, u, "state"), []byte(state), 0o640); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			u := newUpload(t, newFS(t, dir), head)
			damage(t, dir, u)
			s := newFS(t, dir)
			r, err := s.Resume(t.Context(), u.ID())
			if err != nil {
				t.Fatal(err)
			}
			if r.Size() != int64(len(all)) {
				t.Fatalf("Size = %d, want %d", r.Size(), len(all))
			}
			if _, err := r.Commit(t.Context(), blob.Checksums{SHA256: sha(all)}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
		})
	}
}

// TestAppendDiskFull: an append that hits ENOSPC fails with
// blob.ErrNoSpace (the cause kept) and is cut back; with room again the
// same piece goes in.
func TestAppendDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := blobtest.NewDiskFull(100 << 10)
	s, err := fs.New(dir, fs.WithWriter(disk.Wrap))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
	u := newUpload(t, s, data[:50<<10])
	_, err = u.Append(t.Context(), bytes.NewReader(data[50<<10:]), 0)
	if !errors.Is(err, blob.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk: err = %v, want ErrNoSpace wrapping ENOSPC", err)
	}
	if fi, err := os.Stat(uploadFile(dir, u, "data")); err != nil || fi.Size() != 50<<10 || u.Size() != 50<<10 {
		t.Fatalf("after a disk-full append: data %v (%v), Size %d; want %d", fi.Size(), err, u.Size(), 50<<10)
	}
	disk.SetRoom(2 << 20)
	if _, err := u.Append(t.Context(), bytes.NewReader(data[50<<10:]), 0); err != nil {
		t.Fatalf("Append with room: %v", err)
	}
	if _, err := u.Commit(t.Context(), blob.Checksums{SHA256: sha(data)}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// TestSweepClearsCommitDebris: a crash after a commit moved the data but
// before the upload's directory went leaves a directory without data. It
// is no upload, and a sweep removes it whatever its age.
func TestSweepClearsCommitDebris(t *testing.T) {
	dir := t.TempDir()
	s := newFS(t, dir)
	u := newUpload(t, s, []byte("moved"))
	if err := os.Remove(uploadFile(dir, u, "data")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(t.Context(), u.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Resume of debris: err = %v, want ErrUploadUnknown", err)
	}
	if err := s.Uploads(t.Context(), func(in blob.UploadInfo) error { return fmt.Errorf("debris listed: %+v", in) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepUploads(t.Context(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uploads", u.ID())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("debris still there: %v", err)
	}
}

// BenchmarkCommit times Commit alone. It stays flat as the upload grows
// (a rename, and fsyncs of data synced already), where storing the same
// bytes through Put copies and hashes every one of them again.
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			s, err := fs.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			data := make([]byte, size)
			for b.Loop() {
				b.StopTimer()
				// Fresh content each round, so no commit finds its blob
				// stored already.
				_, _ = rand.Read(data[:64])
				u, err := s.Create(b.Context(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := u.Append(b.Context(), bytes.NewReader(data), 0); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				info, err := u.Commit(b.Context(), blob.Checksums{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Delete(b.Context(), info.Digest); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// TestUploadIDPrefix: ids carry the prefix and stay 32 hex digits a
// store resumes; a prefix that is not short hex is ignored.
func TestUploadIDPrefix(t *testing.T) {
	for prefix, want := range map[string]string{"0a1b2c3d": "0a1b2c3d", "ab": "ab", "0a1b2c3d4": "", "XY": "", "../": ""} {
		s, err := fs.New(t.TempDir(), fs.WithUploadIDPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		u := newUpload(t, s, []byte("x"))
		id := u.ID()
		if len(id) != 32 || id[:len(want)] != want {
			t.Fatalf("prefix %q: id %q", prefix, id)
		}
		if _, err := s.Resume(t.Context(), id); err != nil {
			t.Fatalf("prefix %q: resume %s: %v", prefix, id, err)
		}
	}
}
