package fs_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestResumeDuringAppend: an append still streaming holds off a Resume of
// the same upload, which then sees the upload as the append left it: cut
// back when the append failed (a chunk refused halfway), never its bytes
// half-written.
func TestResumeDuringAppend(t *testing.T) {
	ctx := context.Background()
	s := newFS(t, t.TempDir())
	u, err := s.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Append(ctx, strings.NewReader("hello"), 0); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	appended := make(chan error, 1)
	go func() { _, err := u.Append(ctx, pr, 0); appended <- err }()
	if _, err := pw.Write([]byte(" world,")); err != nil { // taken by the append
		t.Fatal(err)
	}
	resumed := make(chan int64, 1)
	go func() {
		r, err := s.Resume(ctx, u.ID())
		if err != nil {
			t.Error(err)
			resumed <- -1
			return
		}
		resumed <- r.Size()
	}()
	select {
	case n := <-resumed:
		t.Fatalf("Resume during the append answered size %d", n)
	case <-time.After(200 * time.Millisecond):
	}
	pw.CloseWithError(errors.New("the chunk was cut"))
	if err := <-appended; err == nil {
		t.Fatal("the cut append succeeded")
	}
	if n := <-resumed; n != 5 {
		t.Fatalf("Resume after the failed append: size %d, want 5", n)
	}
}
