package blobtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// IngestStore is a store whose ingester commits into it.
type IngestStore interface {
	blob.Store
	blob.Ingester
}

// RunIngester checks that stores produced by newStore behave as
// blob.Ingester requires. newStore is called once per subtest and returns
// an empty store and reopen, which returns the same store as a restarted
// process sees it (the store itself where nothing survives a restart).
func RunIngester(t *testing.T, newStore func(t *testing.T) (s IngestStore, reopen func() IngestStore)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s IngestStore, reopen func() IngestStore)
	}{
		{"RoundTrip", testIngestRoundTrip},
		{"Empty", testIngestEmpty},
		{"Resume", testIngestResume},
		{"ResumeAfterReopen", testIngestReopen},
		{"RetryAfterFailedAppend", testIngestRetry},
		{"TooLarge", testIngestTooLarge},
		{"DigestMismatch", testIngestMismatch},
		{"Cancel", testIngestCancel},
		{"Uploads", testIngestUploads},
		{"Sweep", testIngestSweep},
		{"Unknown", testIngestUnknown},
		{"Label", testIngestLabel},
		{"StaleValue", testIngestStale},
		{"CommitStoredAlready", testIngestStoredAlready},
		{"ConcurrentCommit", testIngestConcurrentCommit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reopen := newStore(t)
			tc.fn(t, s, reopen)
		})
	}
}

func create(t *testing.T, s blob.Ingester, label string) blob.Upload {
	t.Helper()
	u, err := s.Create(t.Context(), []byte(label))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return u
}

func appendAll(t *testing.T, u blob.Upload, pieces ...[]byte) {
	t.Helper()
	for _, p := range pieces {
		before := u.Size()
		n, err := u.Append(t.Context(), bytes.NewReader(p), 0)
		if err != nil || n != int64(len(p)) {
			t.Fatalf("Append of %d bytes = %d, %v", len(p), n, err)
		}
		if u.Size() != before+n {
			t.Fatalf("Size after Append = %d, want %d", u.Size(), before+n)
		}
	}
}

func resume(t *testing.T, s blob.Ingester, id string) blob.Upload {
	t.Helper()
	u, err := s.Resume(t.Context(), id)
	if err != nil {
		t.Fatalf("Resume(%s): %v", id, err)
	}
	return u
}

func commit(t *testing.T, u blob.Upload, data []byte) blob.Info {
	t.Helper()
	info, err := u.Commit(t.Context(), blob.Checksums{SHA256: sums(data).SHA256})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	checkInfo(t, info, data)
	return info
}

func wantUnknown(t *testing.T, s blob.Ingester, id string) {
	t.Helper()
	if _, err := s.Resume(t.Context(), id); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Resume(%s): err = %v, want ErrUploadUnknown", id, err)
	}
}

func uploads(t *testing.T, s blob.Ingester) map[string]blob.UploadInfo {
	t.Helper()
	m := map[string]blob.UploadInfo{}
	if err := s.Uploads(t.Context(), func(in blob.UploadInfo) error {
		if _, ok := m[in.ID]; ok {
			t.Errorf("Uploads visited %s twice", in.ID)
		}
		m[in.ID] = in
		return nil
	}); err != nil {
		t.Fatalf("Uploads: %v", err)
	}
	return m
}

func testIngestRoundTrip(t *testing.T, s IngestStore, _ func() IngestStore) {
	u := create(t, s, "owner=alice")
	if id := u.ID(); len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("ID %q is not 32 lowercase hex digits", id)
	}
	if string(u.Label()) != "owner=alice" || u.Size() != 0 {
		t.Fatalf("new upload: label %q, size %d", u.Label(), u.Size())
	}
	if u.ModTime().IsZero() {
		t.Fatal("new upload has no ModTime")
	}
	data := randomBytes(t, 300<<10)
	appendAll(t, u, data[:1], data[1:100<<10], nil, data[100<<10:])
	// Every expected field, in either case, is checked.
	want := sums(data)
	want.SHA256 = strings.ToUpper(want.SHA256)
	info, err := u.Commit(t.Context(), want)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	checkInfo(t, info, data)
	checkContent(t, s, info.Digest, data)

	// The upload is gone, for this value and any other.
	wantUnknown(t, s, u.ID())
	if m := uploads(t, s); len(m) != 0 {
		t.Fatalf("Uploads after Commit = %v", m)
	}
	if _, err := u.Append(t.Context(), strings.NewReader("more"), 0); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Append after Commit: err = %v, want ErrUploadUnknown", err)
	}
	if _, err := u.Commit(t.Context(), blob.Checksums{}); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("second Commit: err = %v, want ErrUploadUnknown", err)
	}
	if err := u.Cancel(t.Context()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Cancel after Commit: err = %v, want ErrUploadUnknown", err)
	}
	if m := walkAll(t, s); len(m) != 1 {
		t.Fatalf("Walk = %v, want one blob", m)
	}
}

func testIngestEmpty(t *testing.T, s IngestStore, _ func() IngestStore) {
	info := commit(t, create(t, s, ""), nil)
	checkContent(t, s, info.Digest, nil)
}

func testIngestResume(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := randomBytes(t, 200<<10)
	u := create(t, s, "l")
	appendAll(t, u, data[:70<<10])
	r := resume(t, s, u.ID())
	if r.ID() != u.ID() || string(r.Label()) != "l" || r.Size() != u.Size() || !r.ModTime().Equal(u.ModTime()) {
		t.Fatalf("Resume = %s %q %d %v, want %s %q %d %v", r.ID(), r.Label(), r.Size(), r.ModTime(), u.ID(), "l", u.Size(), u.ModTime())
	}
	appendAll(t, r, data[70<<10:150<<10])
	appendAll(t, resume(t, s, u.ID()), data[150<<10:])
	commit(t, resume(t, s, u.ID()), data)
	checkContent(t, s, digestOf(data), data)
}

func testIngestReopen(t *testing.T, s IngestStore, reopen func() IngestStore) {
	data := randomBytes(t, 200<<10)
	u := create(t, s, "survives")
	appendAll(t, u, data[:100<<10])
	s = reopen()
	r := resume(t, s, u.ID())
	if string(r.Label()) != "survives" || r.Size() != 100<<10 {
		t.Fatalf("after reopening: label %q, size %d", r.Label(), r.Size())
	}
	appendAll(t, r, data[100<<10:])
	s = reopen()
	info := commit(t, resume(t, s, u.ID()), data)
	checkContent(t, reopen(), info.Digest, data)
}

// testIngestRetry: a piece that fails half-way (reader error,
// cancellation) leaves the upload as it was, checksums included, so the
// same piece can be sent again.
func testIngestRetry(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := randomBytes(t, 300<<10)
	u := create(t, s, "")
	appendAll(t, u, data[:100<<10])
	piece := data[100<<10:]

	boom := errors.New("boom")
	_, err := u.Append(t.Context(), &failingReader{data: bytes.Clone(piece[:150<<10]), err: boom}, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("Append with failing reader: err = %v, want %v", err, boom)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reads := 0
	_, err = u.Append(ctx, &endless{limit: 64 << 20, onRead: func() {
		if reads++; reads == 3 {
			cancel()
		}
	}}, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Append cancelled mid-stream: err = %v, want context.Canceled", err)
	}
	if u.Size() != 100<<10 {
		t.Fatalf("Size after failed appends = %d, want %d", u.Size(), 100<<10)
	}
	if r := resume(t, s, u.ID()); r.Size() != 100<<10 {
		t.Fatalf("resumed Size after failed appends = %d, want %d", r.Size(), 100<<10)
	}
	appendAll(t, u, piece)
	commit(t, u, data)
	checkContent(t, s, digestOf(data), data)
}

func testIngestTooLarge(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := randomBytes(t, 100)
	u := create(t, s, "")
	if n, err := u.Append(t.Context(), bytes.NewReader(data[:60]), 100); err != nil || n != 60 {
		t.Fatalf("Append within the limit = %d, %v", n, err)
	}
	if _, err := u.Append(t.Context(), bytes.NewReader(data[60:]), 99); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Append past the limit: err = %v, want ErrTooLarge", err)
	}
	// The limit must stop reading early, not after draining the body.
	if _, err := u.Append(t.Context(), &endless{limit: 64 << 20}, 1<<10); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Append of endless reader: err = %v, want ErrTooLarge", err)
	}
	if u.Size() != 60 {
		t.Fatalf("Size after refused appends = %d, want 60", u.Size())
	}
	// Exactly the limit is allowed; then not a byte more.
	if n, err := u.Append(t.Context(), bytes.NewReader(data[60:]), 100); err != nil || n != 40 {
		t.Fatalf("Append up to the limit = %d, %v", n, err)
	}
	if _, err := u.Append(t.Context(), strings.NewReader("x"), 100); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Append of one byte at the limit: err = %v, want ErrTooLarge", err)
	}
	if n, err := u.Append(t.Context(), strings.NewReader(""), 100); err != nil || n != 0 {
		t.Fatalf("empty Append at the limit = %d, %v", n, err)
	}
	commit(t, u, data)
	checkContent(t, s, digestOf(data), data)
}

// testIngestMismatch: a wrong digest stores nothing and leaves the upload
// for the caller to decide about.
func testIngestMismatch(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := []byte("expected content")
	other := sums([]byte("something else"))
	u := create(t, s, "")
	appendAll(t, u, data)
	for _, expect := range []blob.Checksums{
		{MD5: other.MD5}, {SHA1: other.SHA1}, {SHA256: other.SHA256}, {SHA512: other.SHA512},
		func() blob.Checksums { c := sums(data); c.SHA1 = other.SHA1; return c }(),
	} {
		if _, err := u.Commit(t.Context(), expect); !errors.Is(err, blob.ErrDigestMismatch) {
			t.Errorf("Commit expecting %+v: err = %v, want ErrDigestMismatch", expect, err)
		}
	}
	checkEmpty(t, s)
	if r := resume(t, s, u.ID()); r.Size() != int64(len(data)) {
		t.Fatalf("upload after mismatches: size %d, want %d", r.Size(), len(data))
	}
	commit(t, u, data)
}

func testIngestCancel(t *testing.T, s IngestStore, _ func() IngestStore) {
	gone, kept := create(t, s, "gone"), create(t, s, "kept")
	appendAll(t, gone, []byte("abandoned"))
	if err := gone.Cancel(t.Context()); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	wantUnknown(t, s, gone.ID())
	if err := gone.Cancel(t.Context()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("second Cancel: err = %v, want ErrUploadUnknown", err)
	}
	if _, err := gone.Append(t.Context(), strings.NewReader("x"), 0); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Append after Cancel: err = %v, want ErrUploadUnknown", err)
	}
	if m := uploads(t, s); len(m) != 1 || string(m[kept.ID()].Label) != "kept" {
		t.Fatalf("Uploads after Cancel = %v, want only %s", m, kept.ID())
	}
	checkEmpty(t, s)
}

func testIngestUploads(t *testing.T, s IngestStore, _ func() IngestStore) {
	if m := uploads(t, s); len(m) != 0 {
		t.Fatalf("Uploads of a new store = %v", m)
	}
	all := map[string]blob.Upload{}
	for i, label := range []string{"a", "b", "c"} {
		u := create(t, s, label)
		appendAll(t, u, bytes.Repeat([]byte("x"), i*10))
		all[u.ID()] = u
	}
	m := uploads(t, s)
	if len(m) != len(all) {
		t.Fatalf("Uploads = %v, want %d uploads", m, len(all))
	}
	for id, u := range all {
		in := m[id]
		if string(in.Label) != string(u.Label()) || in.Size != u.Size() || !in.ModTime.Equal(u.ModTime()) {
			t.Errorf("Uploads gives %+v for %s, want label %q size %d mod %v", in, id, u.Label(), u.Size(), u.ModTime())
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Uploads(t.Context(), func(blob.UploadInfo) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Uploads = %v after %d calls, want stop after 1", err, calls)
	}
}

// testIngestSweep: an upload modified at the cutoff is kept, one modified
// before it is dropped.
func testIngestSweep(t *testing.T, s IngestStore, _ func() IngestStore) {
	u := create(t, s, "")
	appendAll(t, u, []byte("idle"))
	if swept, err := s.SweepUploads(t.Context(), u.ModTime()); err != nil || swept != (blob.Swept{}) {
		t.Fatalf("SweepUploads at the upload's time = %+v, %v; want nothing swept", swept, err)
	}
	resume(t, s, u.ID())
	if swept, err := s.SweepUploads(t.Context(), u.ModTime().Add(time.Nanosecond)); err != nil || swept != (blob.Swept{Count: 1, Bytes: 4}) {
		t.Fatalf("SweepUploads after it = %+v, %v; want 1 upload of 4 bytes", swept, err)
	}
	wantUnknown(t, s, u.ID())
	if m := uploads(t, s); len(m) != 0 {
		t.Fatalf("Uploads after sweep = %v", m)
	}
	if _, err := u.Commit(t.Context(), blob.Checksums{}); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("Commit of a swept upload: err = %v, want ErrUploadUnknown", err)
	}
	checkEmpty(t, s)
}

func testIngestUnknown(t *testing.T, s IngestStore, _ func() IngestStore) {
	u := create(t, s, "")
	for _, id := range []string{
		"", "x", "../../etc/passwd", "..", "/", u.ID() + "0", u.ID()[:31], strings.ToUpper(u.ID()),
		u.ID() + "/../" + u.ID(), "0123456789abcdef0123456789abcdef",
	} {
		if id == u.ID() {
			continue
		}
		wantUnknown(t, s, id)
	}
}

func testIngestLabel(t *testing.T, s IngestStore, _ func() IngestStore) {
	if _, err := s.Create(t.Context(), make([]byte, blob.MaxLabelSize+1)); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Create with an oversized label: err = %v, want ErrTooLarge", err)
	}
	if m := uploads(t, s); len(m) != 0 {
		t.Fatalf("refused Create left %v", m)
	}
	label := bytes.Repeat([]byte{0, 0xff, '\n'}, blob.MaxLabelSize/3)
	u, err := s.Create(t.Context(), label)
	if err != nil {
		t.Fatalf("Create with a label of %d bytes: %v", len(label), err)
	}
	// The caller's slice is the caller's.
	clear(label)
	if r := resume(t, s, u.ID()); !bytes.Equal(r.Label(), u.Label()) || r.Label()[1] != 0xff {
		t.Fatal("label not kept as given")
	}
}

// testIngestStale: a value that another value of the same upload has
// overtaken fails rather than write over the other's bytes.
func testIngestStale(t *testing.T, s IngestStore, _ func() IngestStore) {
	u := create(t, s, "")
	other := resume(t, s, u.ID())
	appendAll(t, other, []byte("first"))
	if _, err := u.Append(t.Context(), strings.NewReader("second"), 0); err == nil {
		t.Fatal("Append through a stale value succeeded")
	}
	if _, err := u.Commit(t.Context(), blob.Checksums{}); err == nil {
		t.Fatal("Commit through a stale value succeeded")
	}
	commit(t, resume(t, s, u.ID()), []byte("first"))
}

func testIngestStoredAlready(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := []byte("stored twice")
	put(t, s, data)
	u := create(t, s, "")
	appendAll(t, u, data)
	commit(t, u, data)
	wantUnknown(t, s, u.ID())
	if m := walkAll(t, s); len(m) != 1 {
		t.Fatalf("Walk = %v, want one blob", m)
	}
	checkContent(t, s, digestOf(data), data)
}

func testIngestConcurrentCommit(t *testing.T, s IngestStore, _ func() IngestStore) {
	data := randomBytes(t, 1<<20)
	const n = 8
	ups := make([]blob.Upload, n)
	for i := range ups {
		ups[i] = create(t, s, "")
		appendAll(t, ups[i], data)
	}
	storeAtOnce(t, s, data, n, func(i int) (blob.Info, error) {
		return ups[i].Commit(t.Context(), blob.Checksums{})
	})
	if m := uploads(t, s); len(m) != 0 {
		t.Fatalf("Uploads after commits = %v", m)
	}
}
