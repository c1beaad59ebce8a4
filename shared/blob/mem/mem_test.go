package mem_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/mem"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Store { return mem.New() })
}

// TestIngester runs the ingester suite; nothing of a Store outlives the
// process, so reopening it is the same store.
func TestIngester(t *testing.T) {
	blobtest.RunIngester(t, func(*testing.T) (blobtest.IngestStore, func() blobtest.IngestStore) {
		s := mem.New()
		return s, func() blobtest.IngestStore { return s }
	})
}

// TestClock: uploads are stamped by the given clock, so a format test
// expires them by moving it.
func TestClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := mem.New(mem.WithClock(func() time.Time { return now }))
	u, err := s.Create(t.Context(), []byte("l"))
	if err != nil {
		t.Fatal(err)
	}
	if !u.ModTime().Equal(now) {
		t.Fatalf("ModTime after Create = %v, want %v", u.ModTime(), now)
	}
	now = now.Add(time.Hour)
	if _, err := u.Append(t.Context(), strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
	if !u.ModTime().Equal(now) {
		t.Fatalf("ModTime after Append = %v, want %v", u.ModTime(), now)
	}
	if _, err := s.SweepUploads(t.Context(), now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(t.Context(), u.ID()); err != nil {
		t.Fatalf("fresh upload swept: %v", err)
	}
	if _, err := s.SweepUploads(t.Context(), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(t.Context(), u.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("idle upload kept: %v", err)
	}
}

func TestSweeper(t *testing.T) {
	blobtest.RunSweeper(t, func(_ *testing.T, now func() time.Time) blob.Store { return mem.New(mem.WithClock(now)) })
}
