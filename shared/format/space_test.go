package format_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/fs"
	"github.com/depot-registry/depot/shared/format"
)

// guard is a SpaceGuard with a fixed room above the minimum.
type guard struct {
	room     int64
	observed []error
}

func (g *guard) Admit(n int64) error {
	if g.room <= 0 || n > g.room {
		return fmt.Errorf("%w: room %d", blob.ErrNoSpace, g.room)
	}
	return nil
}
func (g *guard) Reader(body io.Reader) io.Reader { return body }
func (g *guard) Observe(err error)               { g.observed = append(g.observed, err) }

// sized is a request body that declares its length and records reads.
type sized struct {
	io.Reader
	n    int64
	read bool
}

func (s *sized) Read(p []byte) (int, error) { s.read = true; return s.Reader.Read(p) }
func (s *sized) Size() int64                { return s.n }

// TestPutBlobGuard: an upload that does not fit is refused with
// ErrNoSpace before a byte of it is read, and renders as 507.
func TestPutBlobGuard(t *testing.T) {
	store, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := &guard{room: 100}
	d := &format.Writer{Blobs: store, Space: g}

	body := &sized{Reader: strings.NewReader(strings.Repeat("x", 1000)), n: 1000}
	_, err = d.PutBlob(t.Context(), body, blob.Checksums{})
	if !errors.Is(err, blob.ErrNoSpace) || body.read {
		t.Fatalf("declared 1000 bytes with room for 100: err %v, body read %v", err, body.read)
	}
	if e := format.Classify(err); e.Status() != http.StatusInsufficientStorage || e.Code != "INSUFFICIENT_STORAGE" {
		t.Fatalf("Classify = %+v", e)
	}
	if _, err := d.PutBlob(t.Context(), &sized{Reader: strings.NewReader("fits"), n: 4}, blob.Checksums{}); err != nil {
		t.Fatalf("upload that fits: %v", err)
	}
}

// failingStore fails every Put as a full disk does.
type failingStore struct{ blob.Store }

func (failingStore) Put(context.Context, io.Reader, blob.PutOptions) (blob.Info, error) {
	return blob.Info{}, fmt.Errorf("write: %w", syscall.ENOSPC)
}

// TestPutBlobDiskFull: a store's disk-full error comes back as
// ErrNoSpace and the guard hears of it (for health).
func TestPutBlobDiskFull(t *testing.T) {
	g := &guard{room: 1 << 30}
	d := &format.Writer{Blobs: failingStore{}, Space: g}
	_, err := d.PutBlob(t.Context(), strings.NewReader("x"), blob.Checksums{})
	if !errors.Is(err, blob.ErrNoSpace) || len(g.observed) != 1 || !blob.DiskFull(g.observed[0]) {
		t.Fatalf("err %v, observed %v", err, g.observed)
	}
}
