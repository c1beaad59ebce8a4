// Package mem implements blob.Store and blob.Ingester in memory, for tests
// of formats that need a store but not a disk. Nothing bounds its size.
package mem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/internal/blobio"
)

// Store is an in-memory blob store and ingester. It is safe for
// concurrent use. Stored bytes are never modified, so readers share them.
type Store struct {
	now func() time.Time

	mu      sync.Mutex
	blobs   map[string][]byte    // by sha256 digest
	recent  map[string]time.Time // when each blob was last made recent (blob.Sweeper)
	uploads map[string]*entry    // by id
}

type entry struct {
	label []byte
	data  []byte
	mod   time.Time
}

var (
	_ blob.Store    = (*Store)(nil)
	_ blob.Ingester = (*Store)(nil)
)

// Option tunes a Store.
type Option func(*Store)

// WithClock sets the clock that stamps uploads' ModTime and blobs as
// recent, so a test can expire them by moving its clock rather than by
// waiting.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, blobs: map[string][]byte{}, recent: map[string]time.Time{}, uploads: map[string]*entry{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// read takes r whole (at most room bytes, room < 0: no limit) outside the
// lock, as a reader may block.
func read(ctx context.Context, r io.Reader, room int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := blobio.Copy(ctx, &buf, r, room)
	return buf.Bytes(), err
}

func sumsOf(data []byte) blob.Checksums {
	h := blobio.NewHasher()
	_, _ = h.Write(data)
	return h.Sums()
}

// Put implements blob.Putter.
func (s *Store) Put(ctx context.Context, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	if opts.MaxSize < 0 {
		return blob.Info{}, fmt.Errorf("blob/mem: negative MaxSize %d", opts.MaxSize)
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	room := int64(-1)
	if opts.MaxSize > 0 {
		room = opts.MaxSize
	}
	data, err := read(ctx, r, room)
	if err != nil {
		return blob.Info{}, fmt.Errorf("blob/mem: put: %w", err)
	}
	return s.store(data, opts.Expect)
}

// store keeps data, which the caller gives up, if it matches expect.
func (s *Store) store(data []byte, expect blob.Checksums) (blob.Info, error) {
	sums := sumsOf(data)
	if err := sums.Verify(expect); err != nil {
		return blob.Info{}, err
	}
	return s.keep(data, sums), nil
}

// keep stores data with its checksums, unless it is stored already, and
// makes it recent either way.
func (s *Store) keep(data []byte, sums blob.Checksums) blob.Info {
	info := blob.Info{Digest: "sha256:" + sums.SHA256, Size: int64(len(data)), Checksums: sums}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.blobs[info.Digest]; !ok {
		s.blobs[info.Digest] = data
	}
	s.recent[info.Digest] = s.now()
	return info
}

// get returns the bytes of digest.
func (s *Store) get(ctx context.Context, digest string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	algo, _, err := blob.ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	data, ok := s.blobs[digest]
	s.mu.Unlock()
	if algo != "sha256" || !ok {
		return nil, fmt.Errorf("%w: %s", blob.ErrNotFound, digest)
	}
	return data, nil
}

// Open implements blob.Opener.
func (s *Store) Open(ctx context.Context, digest string) (blob.File, error) {
	data, err := s.get(ctx, digest)
	if err != nil {
		return nil, err
	}
	return file{bytes.NewReader(data)}, nil
}

// file is read-only over shared bytes; bytes.Reader has Size already.
type file struct{ *bytes.Reader }

func (file) Close() error { return nil }

// Stat implements blob.Statter.
func (s *Store) Stat(ctx context.Context, digest string) (int64, error) {
	data, err := s.get(ctx, digest)
	return int64(len(data)), err
}

// Delete implements blob.Deleter.
func (s *Store) Delete(ctx context.Context, digest string) error {
	return s.stored(ctx, digest, func() {
		delete(s.blobs, digest)
		delete(s.recent, digest)
	})
}

// Keep implements blob.Sweeper.
func (s *Store) Keep(ctx context.Context, digest string) error {
	return s.stored(ctx, digest, func() { s.recent[digest] = s.now() })
}

// stored runs fn under the lock if digest is stored, else answers as get.
func (s *Store) stored(ctx context.Context, digest string, fn func()) error {
	if _, err := s.get(ctx, digest); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.blobs[digest]; !ok {
		return fmt.Errorf("%w: %s", blob.ErrNotFound, digest) // deleted meanwhile
	}
	fn()
	return nil
}

// Sweep implements blob.Sweeper. unused runs under the store's lock,
// which holds off every writer meanwhile.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, unused func(digest string) (bool, error)) (blob.SweepResult, error) {
	var res blob.SweepResult
	err := s.Walk(ctx, func(digest string, size int64) error {
		res.Scanned++
		defer blob.TraceScanned(ctx, size)
		s.mu.Lock()
		defer s.mu.Unlock()
		data, ok := s.blobs[digest]
		if !ok || !s.recent[digest].Before(cutoff) {
			return nil
		}
		drop, err := unused(digest)
		if err != nil || !drop {
			return err
		}
		delete(s.blobs, digest)
		delete(s.recent, digest)
		res.Removed.Add(int64(len(data)))
		return nil
	})
	return res, err
}

// Walk implements blob.Walker, in digest order, over the blobs stored
// when it started; fn runs without the lock, so it may use the store.
func (s *Store) Walk(ctx context.Context, fn func(digest string, size int64) error) error {
	s.mu.Lock()
	sizes := make(map[string]int64, len(s.blobs))
	for d, b := range s.blobs {
		sizes[d] = int64(len(b))
	}
	s.mu.Unlock()
	for _, d := range slices.Sorted(maps.Keys(sizes)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(d, sizes[d]); err != nil {
			return err
		}
	}
	return nil
}

// Create implements blob.Ingester.
func (s *Store) Create(ctx context.Context, label []byte) (blob.Upload, error) {
	if len(label) > blob.MaxLabelSize {
		return nil, fmt.Errorf("%w: upload label of %d bytes", blob.ErrTooLarge, len(label))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := &entry{label: bytes.Clone(label), mod: s.now()}
	id := blobio.NewUploadID()
	s.mu.Lock()
	s.uploads[id] = e
	s.mu.Unlock()
	return &upload{s: s, id: id, label: e.label, mod: e.mod}, nil
}

// Resume implements blob.Ingester.
func (s *Store) Resume(ctx context.Context, id string) (blob.Upload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.uploads[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", blob.ErrUploadUnknown, id)
	}
	return &upload{s: s, id: id, label: e.label, size: int64(len(e.data)), mod: e.mod}, nil
}

// Uploads implements blob.Ingester, in id order, over the uploads live
// when it started.
func (s *Store) Uploads(ctx context.Context, fn func(blob.UploadInfo) error) error {
	s.mu.Lock()
	infos := make([]blob.UploadInfo, 0, len(s.uploads))
	for id, e := range s.uploads {
		infos = append(infos, blob.UploadInfo{ID: id, Label: e.label, Size: int64(len(e.data)), ModTime: e.mod})
	}
	s.mu.Unlock()
	slices.SortFunc(infos, func(a, b blob.UploadInfo) int { return strings.Compare(a.ID, b.ID) })
	for _, in := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

// SweepUploads implements blob.Ingester.
func (s *Store) SweepUploads(ctx context.Context, olderThan time.Time) (blob.Swept, error) {
	var swept blob.Swept
	if err := ctx.Err(); err != nil {
		return swept, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.uploads {
		if e.mod.Before(olderThan) {
			delete(s.uploads, id)
			swept.Add(int64(len(e.data)))
		}
	}
	return swept, nil
}

type upload struct {
	s     *Store
	id    string
	label []byte
	size  int64
	mod   time.Time
}

// errChanged: another value of the upload changed it meanwhile.
var errChanged = errors.New("blob/mem: upload changed by another writer")

func (u *upload) ID() string         { return u.id }
func (u *upload) Label() []byte      { return u.label }
func (u *upload) Size() int64        { return u.size }
func (u *upload) ModTime() time.Time { return u.mod }

// entry returns the upload's entry, locked, checking that it is as this
// value left it; the caller unlocks.
func (u *upload) entry() (*entry, error) {
	u.s.mu.Lock()
	e, ok := u.s.uploads[u.id]
	if !ok {
		u.s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", blob.ErrUploadUnknown, u.id)
	}
	if int64(len(e.data)) != u.size {
		u.s.mu.Unlock()
		return nil, errChanged
	}
	return e, nil
}

// Append implements blob.Upload. The piece is read whole before it is
// added, so a failed one leaves nothing to cut back.
func (u *upload) Append(ctx context.Context, r io.Reader, max int64) (int64, error) {
	if max < 0 {
		return 0, fmt.Errorf("blob/mem: negative upload limit %d", max)
	}
	if max > 0 && u.size > max {
		return 0, fmt.Errorf("%w: more than %d bytes", blob.ErrTooLarge, max)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	room := int64(-1)
	if max > 0 {
		room = max - u.size
	}
	piece, err := read(ctx, r, room)
	if errors.Is(err, blob.ErrTooLarge) {
		return 0, fmt.Errorf("%w: more than %d bytes", blob.ErrTooLarge, max)
	}
	if err != nil {
		return 0, fmt.Errorf("blob/mem: append: %w", err)
	}
	e, err := u.entry()
	if err != nil {
		return 0, err
	}
	defer u.s.mu.Unlock()
	if len(piece) > 0 {
		e.data = append(e.data, piece...)
		e.mod = u.s.now()
	}
	u.size, u.mod = int64(len(e.data)), e.mod
	return int64(len(piece)), nil
}

// Commit implements blob.Upload.
func (u *upload) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	e, err := u.entry()
	if err != nil {
		return blob.Info{}, err
	}
	data := e.data
	sums := sumsOf(data)
	if err := sums.Verify(expect); err != nil {
		u.s.mu.Unlock()
		return blob.Info{}, err
	}
	delete(u.s.uploads, u.id)
	u.s.mu.Unlock()
	return u.s.keep(data, sums), nil
}

// Cancel implements blob.Upload.
func (u *upload) Cancel(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if _, ok := u.s.uploads[u.id]; !ok {
		return fmt.Errorf("%w: %s", blob.ErrUploadUnknown, u.id)
	}
	delete(u.s.uploads, u.id)
	return nil
}
