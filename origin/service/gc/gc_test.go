package gc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/fs"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func put(t *testing.T, s blob.Store, data string) blob.Info {
	t.Helper()
	info, err := s.Put(t.Context(), bytes.NewReader([]byte(data)), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func age(t *testing.T, p string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestCollect: one collection over a data directory holding every kind
// of garbage and everything that must survive.
func TestCollect(t *testing.T) {
	e := formattest.New(t)
	clock := &blobtest.Clock{}
	clock.Set(epoch)
	dir := t.TempDir()
	blobs, err := fs.New(filepath.Join(dir, "blobs"), fs.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	repo := e.Repo("files", generic.Name)

	// Written long ago: one blob an artifact refers to, one a format key
	// refers to, one nothing refers to (its artifact was deleted).
	inUse, keyed, orphan := put(t, blobs, "in use"), put(t, blobs, "kept by a key"), put(t, blobs, "orphaned bytes")
	for _, c := range []meta.Command{
		&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a1", RepositoryID: repo.ID, Path: "p/1/a", Digest: inUse.Digest, SizeBytes: inUse.Size}},
		&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a2", RepositoryID: repo.ID, Path: "p/1/b", Digest: orphan.Digest, SizeBytes: orphan.Size}},
		&meta.ArtifactDelete{ID: "a2", RepoID: repo.ID},
		&meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{{Key: "k", Value: []byte(`{}`), Blobs: []string{keyed.Digest}}}},
	} {
		if _, err := e.Apply(t.Context(), c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	// An upload abandoned long ago, and one in progress.
	stale, err := blobs.Create(t.Context(), []byte("stale"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Append(t.Context(), bytes.NewReader([]byte("12345")), 0); err != nil {
		t.Fatal(err)
	}
	age(t, filepath.Join(dir, "blobs", "uploads", stale.ID(), "data"), 7*time.Hour)
	live, err := blobs.Create(t.Context(), []byte("live"))
	if err != nil {
		t.Fatal(err)
	}
	// Leftovers of failed writes, old and recent, in the blob store's
	// temp directory and in the scratch directory.
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(filepath.Join(scratch, "npm"), 0o750); err != nil {
		t.Fatal(err)
	}
	oldTemp, newTemp := filepath.Join(dir, "blobs", "tmp", "put-1"), filepath.Join(dir, "blobs", "tmp", "put-2")
	oldScratch, newScratch := filepath.Join(scratch, "npm", "spill-1"), filepath.Join(scratch, "npm", "spill-2")
	for _, p := range []string{oldTemp, newTemp, oldScratch, newScratch} {
		if err := os.WriteFile(p, []byte("leftover"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	age(t, oldTemp, 2*time.Hour)
	age(t, oldScratch, 2*time.Hour)

	// Two hours on: a blob written now is recent, though unreferenced.
	clock.Set(epoch.Add(2 * time.Hour))
	fresh := put(t, blobs, "uploaded just now")

	c := gc.New(gc.Config{Meta: e.Store, Blobs: blobs, Uploads: blobs, UploadTTL: 6 * time.Hour, Scratch: scratch, Now: clock.Now,
		Stored: func() int64 { return 4 }})
	res, err := c.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := gc.Result{StartedAt: epoch.Add(2 * time.Hour), GraceSeconds: 3600, BlobsScanned: 4,
		Blobs: blob.Swept{Count: 1, Bytes: orphan.Size}, Uploads: blob.Swept{Count: 1, Bytes: 5},
		TempFiles: blob.Swept{Count: 2, Bytes: 16}}
	want.BytesFreed = want.Blobs.Bytes + want.Uploads.Bytes + want.TempFiles.Bytes
	res.DurationMS = 0
	if res != want {
		t.Fatalf("Run =\n %+v, want\n %+v", res, want)
	}
	// Its progress: every blob scanned, n of N, with their bytes.
	if st := c.Status(); st.Running || st.Operation != "garbage_collection" || st.Done != 4 || st.Total != 4 || st.Bytes == 0 {
		t.Errorf("Status after a collection = %+v", st)
	}
	for _, d := range []string{inUse.Digest, keyed.Digest, fresh.Digest} {
		if _, err := blobs.Stat(t.Context(), d); err != nil {
			t.Errorf("blob %s was removed: %v", d, err)
		}
	}
	if _, err := blobs.Stat(t.Context(), orphan.Digest); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("orphaned blob: Stat err = %v, want ErrNotFound", err)
	}
	if _, err := blobs.Resume(t.Context(), live.ID()); err != nil {
		t.Errorf("live upload was removed: %v", err)
	}
	if _, err := blobs.Resume(t.Context(), stale.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Errorf("stale upload: Resume err = %v, want ErrUploadUnknown", err)
	}
	for p, want := range map[string]bool{oldTemp: false, newTemp: true, oldScratch: false, newScratch: true} {
		if exists(p) != want {
			t.Errorf("%s exists = %v, want %v", p, !want, want)
		}
	}
	// Nothing is left to collect.
	if res, err := c.Run(t.Context()); err != nil || res.BytesFreed != 0 {
		t.Fatalf("second Run = %+v, %v; want nothing freed", res, err)
	}
}

// blockingStore holds a sweep until released.
type blockingStore struct {
	blob.Store
	started, release chan struct{}
}

func (b *blockingStore) Sweep(ctx context.Context, cutoff time.Time, unused func(string) (bool, error)) (blob.SweepResult, error) {
	close(b.started)
	<-b.release
	return b.Store.Sweep(ctx, cutoff, unused)
}

// TestOneAtATime: a collection asked for while one runs is refused.
func TestOneAtATime(t *testing.T) {
	e := formattest.New(t)
	bs := &blockingStore{Store: e.Blobs, started: make(chan struct{}), release: make(chan struct{})}
	c := gc.New(gc.Config{Meta: e.Store, Blobs: bs})
	done := make(chan error)
	go func() { _, err := c.Run(t.Context()); done <- err }()
	<-bs.started
	if _, err := c.Run(t.Context()); !errors.Is(err, gc.ErrRunning) {
		t.Fatalf("second Run: err = %v, want ErrRunning", err)
	}
	close(bs.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	bs.started = make(chan struct{}) // release stays closed: the next run goes through
	if _, err := c.Run(t.Context()); err != nil {
		t.Fatalf("Run after the first ended: %v", err)
	}
}

// TestUnderLoad races collections with a short grace period against
// clients that upload, download and delete files through the generic
// format, reusing a few contents so that blobs keep going from used to
// unused and back. No upload that was acknowledged may lose its blob.
func TestUnderLoad(t *testing.T) {
	e := formattest.New(t)
	e.Repo("files", generic.Name)
	node := e.Node(func(env *format.Env) []format.Format { return []format.Format{generic.New(env)} })
	contents := make([][]byte, 100)
	for i := range contents {
		contents[i] = fmt.Appendf(nil, "content %d %s", i, bytes.Repeat([]byte{byte(i)}, 100))
	}
	// The grace must outlast any upload's time from storing its blob to
	// committing its record (the collector's one assumption); a second
	// does, even on a loaded machine under the race detector.
	c := gc.New(gc.Config{Meta: e.Store, Blobs: e.Blobs, Grace: time.Second})

	ctx, stop := context.WithCancel(t.Context())
	var removed atomic.Int64
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for ctx.Err() == nil {
			res, err := c.Run(ctx)
			if err != nil && ctx.Err() == nil {
				t.Errorf("Run: %v", err)
				return
			}
			removed.Add(int64(res.Blobs.Count))
		}
	}()

	const clients, rounds = 4, 80
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				body := contents[rand.IntN(len(contents))]
				url := fmt.Sprintf("%s/generic/files/pkg/1.0/c%d-%d.bin", node.URL, w, i)
				if code, out := e.Do(http.MethodPut, url, "application/octet-stream", body); code != http.StatusCreated {
					t.Errorf("PUT %s: %d %s", url, code, out)
					return
				}
				if code, out := e.Do(http.MethodGet, url, "", nil); code != http.StatusOK || !bytes.Equal(out, body) {
					t.Errorf("GET %s right after its upload: %d, %d bytes (want %d)", url, code, len(out), len(body))
					return
				}
				if rand.IntN(4) != 0 {
					if code, out := e.Do(http.MethodDelete, url, "", nil); code != http.StatusNoContent && code != http.StatusOK {
						t.Errorf("DELETE %s: %d %s", url, code, out)
						return
					}
				}
				time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	stop()
	<-collected

	// Every file still listed has its bytes.
	var arts []meta.Artifact
	if err := e.Store.View(func(tx *meta.Tx) error {
		var err error
		arts, err = tx.ArtifactsUnder("repo-files", "")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(arts) == 0 {
		t.Fatal("no artifacts left: the test proves nothing")
	}
	for _, a := range arts {
		if _, err := e.Blobs.Stat(t.Context(), a.Digest); err != nil {
			t.Errorf("artifact %s lost its blob: %v", a.Path, err)
		}
	}
	if removed.Load() == 0 {
		t.Fatal("no collection removed anything: the load never made a blob unused")
	}
	t.Logf("%d artifacts kept their blobs; collections removed %d unused blobs meanwhile", len(arts), removed.Load())
}
