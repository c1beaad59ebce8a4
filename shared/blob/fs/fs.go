// Package fs implements blob.Store on a local directory.
//
// Layout:
//
//	<dir>/sha256/<first 2 hex>/<full hex>   stored blobs
//	<dir>/tmp/                              files of Puts in progress, and
//	                                        uploads being created or removed
//	<dir>/uploads/<id>/                     uploads of the Ingester (see ingest.go)
//
// A blob becomes visible only through an atomic rename of a fully written
// and fsynced file, so readers never see partial content. Uploads live in
// the same directory tree so that committing one is a rename too. The
// directory must be owned by a single FS: New deletes whatever is in tmp/.
package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/internal/blobio"
	"github.com/depot-registry/depot/shared/keylock"
)

const (
	fileMode = 0o640
	dirMode  = 0o750
)

// FS is a blob.Store backed by a directory. It is safe for concurrent use.
type FS struct {
	blobs   string // <dir>/sha256
	tmp     string // <dir>/tmp
	uploads string // <dir>/uploads
	wrap    func(io.Writer) io.Writer
	now     func() time.Time
	// idPrefix starts every upload id (WithUploadIDPrefix).
	idPrefix string
	// locks hold off writers of a digest while a sweep decides on it
	// (see blob.Sweeper), striped by the digest's first byte.
	locks [256]sync.Mutex
	// uploadLocks serialise what reads or changes one upload here: an
	// append still streaming (or being cut back after a failure) is not
	// seen half-written by a Resume, nor raced by another append.
	uploadLocks keylock.Lock
	usage       usage
}

var (
	_ blob.Store    = (*FS)(nil)
	_ blob.Ingester = (*FS)(nil)
)

// Option tunes an FS.
type Option func(*FS)

// WithWriter routes the bytes of every Put and every upload's Append
// through wrap on their way to the file: tests use it to make a write
// fail as a full disk does. A nil wrap changes nothing.
func WithWriter(wrap func(io.Writer) io.Writer) Option {
	return func(s *FS) { s.wrap = wrap }
}

// WithUploadIDPrefix makes every upload id start with prefix (at most 8
// lowercase hex digits; ids stay 32 hex digits, the rest random), so
// whoever holds an id can tell which store handed it out: an origin of a
// cluster passes a request for another origin's upload to it. Any other
// prefix is ignored.
func WithUploadIDPrefix(prefix string) Option {
	return func(s *FS) {
		if len(prefix) <= 8 && blobio.ValidUploadID(prefix+blobio.NewUploadID()[len(prefix):]) {
			s.idPrefix = prefix
		}
	}
}

// WithClock sets the clock that stamps blobs as recent (see
// blob.Sweeper), so a test can age them by moving its clock.
func WithClock(now func() time.Time) Option {
	return func(s *FS) {
		if now != nil {
			s.now = now
		}
	}
}

// New opens (creating if needed) a store rooted at dir and removes temp
// files left behind by a crash. Uploads are kept: they can be resumed.
func New(dir string, opts ...Option) (*FS, error) {
	if dir == "" {
		return nil, errors.New("blob/fs: empty directory")
	}
	s := &FS{
		blobs:   filepath.Join(dir, "sha256"),
		tmp:     filepath.Join(dir, "tmp"),
		uploads: filepath.Join(dir, "uploads"),
		now:     time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	for _, d := range []string{s.blobs, s.tmp, s.uploads} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("blob/fs: %w", err)
		}
	}
	// Nothing can be in flight yet, so anything in tmp/ is crash debris.
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.tmp, e.Name())); err != nil {
			return nil, fmt.Errorf("blob/fs: removing stale temp file: %w", err)
		}
	}
	return s, nil
}

// path maps a digest to its file. Only validated hex reaches the
// filesystem, which rules out path traversal.
func (s *FS) path(digest string) (string, error) {
	algo, hx, err := blob.ParseDigest(digest)
	if err != nil {
		return "", err
	}
	if algo != "sha256" {
		// Well-formed but never used as an address here.
		return "", fmt.Errorf("%w: %s", blob.ErrNotFound, digest)
	}
	return filepath.Join(s.blobs, hx[:2], hx), nil
}

// Put implements blob.Putter. A full disk (or quota) yields an error
// wrapping blob.ErrNoSpace; as with any failure, nothing is left behind.
func (s *FS) Put(ctx context.Context, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	info, err := s.put(ctx, r, opts)
	if err != nil {
		return blob.Info{}, blob.NoSpace(err)
	}
	return info, nil
}

func (s *FS) put(ctx context.Context, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	if opts.MaxSize < 0 {
		return blob.Info{}, fmt.Errorf("blob/fs: negative MaxSize %d", opts.MaxSize)
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	tmp, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return blob.Info{}, fmt.Errorf("blob/fs: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// Double Close after a successful close is harmless here.
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp uses 0o600; set the documented mode explicitly so the
	// result does not depend on the umask.
	if err := tmp.Chmod(fileMode); err != nil {
		return blob.Info{}, fmt.Errorf("blob/fs: %w", err)
	}

	h := blobio.NewHasher()
	var file io.Writer = tmp
	if s.wrap != nil {
		file = s.wrap(tmp)
	}
	room := int64(-1)
	if opts.MaxSize > 0 {
		room = opts.MaxSize
	}
	n, err := blobio.Copy(ctx, io.MultiWriter(h, file), r, room)
	if errors.Is(err, blob.ErrTooLarge) {
		return blob.Info{}, fmt.Errorf("%w: more than %d bytes", blob.ErrTooLarge, opts.MaxSize)
	}
	if err != nil {
		// Covers reader, write and ctx errors.
		return blob.Info{}, fmt.Errorf("blob/fs: put: %w", err)
	}

	sums := h.Sums()
	info := blob.Info{Digest: "sha256:" + sums.SHA256, Size: n, Checksums: sums}
	if err := sums.Verify(opts.Expect); err != nil {
		return blob.Info{}, err
	}

	// Data must be on disk before the rename publishes it.
	if err := tmp.Sync(); err != nil {
		return blob.Info{}, fmt.Errorf("blob/fs: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return blob.Info{}, fmt.Errorf("blob/fs: %w", err)
	}
	// Last chance to honour cancellation before the blob becomes visible.
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	committed, err = s.place(tmp.Name(), sums.SHA256, n)
	return info, err
}

// place publishes the fsynced file src as the blob with sha256 hex hx and
// size n. It reports whether src was moved; when the blob is stored
// already, src is left for the caller to remove.
func (s *FS) place(src, hx string, n int64) (moved bool, err error) {
	final := filepath.Join(s.blobs, hx[:2], hx)
	shard := filepath.Dir(final)
	switch err := os.Mkdir(shard, dirMode); {
	case err == nil:
		// The new shard entry must be durable too.
		if err := syncDir(s.blobs); err != nil {
			return false, fmt.Errorf("blob/fs: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return false, fmt.Errorf("blob/fs: %w", err)
	}

	mu := s.lock(hx)
	mu.Lock()
	defer mu.Unlock()
	now := s.now()
	if fi, err := os.Stat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == n {
		// Already stored: keep the existing file, made recent so that a
		// sweep leaves it to the record this write is about to commit.
		// Sync the directory anyway in case a concurrent writer renamed
		// it in but has not fsynced the directory yet.
		if err := os.Chtimes(final, now, now); err != nil {
			return false, fmt.Errorf("blob/fs: %w", err)
		}
		if err := syncDir(shard); err != nil {
			return false, fmt.Errorf("blob/fs: %w", err)
		}
		return false, nil
	}
	// An upload's data keeps the time of its last append: stamp it now.
	if err := os.Chtimes(src, now, now); err != nil {
		return false, fmt.Errorf("blob/fs: %w", err)
	}
	// Identical content under the same name, so replacing a file that a
	// concurrent writer renamed in first is harmless.
	if err := os.Rename(src, final); err != nil {
		return false, fmt.Errorf("blob/fs: %w", err)
	}
	s.usage.add(1, n)
	if err := syncDir(shard); err != nil {
		return true, fmt.Errorf("blob/fs: %w", err)
	}
	return true, nil
}

// Open implements blob.Opener.
func (s *FS) Open(ctx context.Context, digest string) (blob.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(err, digest)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s", blob.ErrNotFound, digest)
	}
	return &file{File: f, size: fi.Size()}, nil
}

// file embeds *os.File so its Read, ReadAt, Seek, Close (and WriteTo, which
// can use sendfile) are used directly.
type file struct {
	*os.File
	size int64
}

func (f *file) Size() int64 { return f.size }

// Stat implements blob.Statter.
func (s *FS) Stat(ctx context.Context, digest string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p, err := s.path(digest)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, notFound(err, digest)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s", blob.ErrNotFound, digest)
	}
	return fi.Size(), nil
}

// Delete implements blob.Deleter.
func (s *FS) Delete(ctx context.Context, digest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.path(digest)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return notFound(err, digest)
	}
	if err := os.Remove(p); err != nil {
		return notFound(err, digest)
	}
	s.usage.add(-1, -fi.Size())
	// Without this a crash could resurrect the blob.
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("blob/fs: %w", err)
	}
	return nil
}

// Walk implements blob.Walker. Blobs are visited in digest order; files
// that do not look like blobs are skipped.
func (s *FS) Walk(ctx context.Context, fn func(digest string, size int64) error) error {
	return s.walk(ctx, func(digest, _ string, fi fs.FileInfo) error { return fn(digest, fi.Size()) })
}

// walk visits every blob in digest order with its file's path and info.
func (s *FS) walk(ctx context.Context, fn func(digest, path string, fi fs.FileInfo) error) error {
	shards, err := os.ReadDir(s.blobs)
	if err != nil {
		return fmt.Errorf("blob/fs: %w", err)
	}
	for _, sh := range shards {
		if !sh.IsDir() || len(sh.Name()) != 2 {
			continue
		}
		dir := filepath.Join(s.blobs, sh.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("blob/fs: %w", err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			digest := "sha256:" + e.Name()
			if _, _, err := blob.ParseDigest(digest); err != nil ||
				!strings.HasPrefix(e.Name(), sh.Name()) || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted since ReadDir
				}
				return fmt.Errorf("blob/fs: %w", err)
			}
			if err := fn(digest, filepath.Join(dir, e.Name()), fi); err != nil {
				return err
			}
		}
	}
	return nil
}

func notFound(err error, digest string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", blob.ErrNotFound, digest)
	}
	return fmt.Errorf("blob/fs: %w", err)
}

// syncDir makes renames and removals inside dir durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		// Directories cannot be fsynced there; NTFS journals metadata.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
