package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/internal/blobio"
)

// An upload is the directory <dir>/uploads/<id>/ holding
//
//	label   the caller's label, written once
//	data    the bytes so far; its mtime is the upload's ModTime
//	state   the hash state and the size it covers (JSON), replaced
//	        atomically after every Append
//
// A Create builds the directory under tmp/ and renames it in, so an upload
// directory is always whole; Cancel and sweeps rename it back into tmp/
// before deleting it, so a half-deleted upload is never seen and a crash
// leaves only what New clears. Commit renames data into the blob tree.
const (
	labelFile = "label"
	dataFile  = "data"
	stateFile = "state"
)

// state is what the state file holds.
type state struct {
	Size int64  `json:"size"`
	Hash []byte `json:"hash"` // blobio.Hasher state after Size bytes
}

// errChanged means the data no longer has the size this value of the
// upload knows: someone else used the upload at the same time.
var errChanged = errors.New("blob/fs: upload changed by another writer")

type upload struct {
	s     *FS
	id    string
	dir   string
	label []byte
	size  int64
	mod   time.Time
	hash  *blobio.Hasher
}

var _ blob.Upload = (*upload)(nil)

// Create implements blob.Ingester.
func (s *FS) Create(ctx context.Context, label []byte) (blob.Upload, error) {
	u, err := s.create(ctx, label)
	return u, blob.NoSpace(err)
}

func (s *FS) create(ctx context.Context, label []byte) (blob.Upload, error) {
	if len(label) > blob.MaxLabelSize {
		return nil, fmt.Errorf("%w: upload label of %d bytes", blob.ErrTooLarge, len(label))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := s.idPrefix + blobio.NewUploadID()[len(s.idPrefix):]
	stage := filepath.Join(s.tmp, "upload-"+id)
	if err := os.Mkdir(stage, dirMode); err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = os.RemoveAll(stage)
		}
	}()
	if err := os.WriteFile(filepath.Join(stage, labelFile), label, fileMode); err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(stage, dataFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	// The data file becomes the blob: give it the documented mode
	// whatever the umask.
	err = f.Chmod(fileMode)
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	dir := filepath.Join(s.uploads, id)
	if err := os.Rename(stage, dir); err != nil {
		return nil, fmt.Errorf("blob/fs: %w", err)
	}
	placed = true
	return &upload{s: s, id: id, dir: dir, label: bytes.Clone(label), mod: s.stamp(filepath.Join(dir, dataFile), fi.ModTime()), hash: blobio.NewHasher()}, nil
}

// stamp sets the modification time of an upload's data to the store's
// clock, which the sweeps compare with; if that fails, the kernel's time
// (had) stays.
func (s *FS) stamp(data string, had time.Time) time.Time {
	now := s.now()
	if err := os.Chtimes(data, now, now); err != nil {
		return had
	}
	return now
}

// Resume implements blob.Ingester. The saved hash state is used when it
// covers exactly the data; otherwise (a crash between writing the data and
// the state) the data is hashed again, once.
func (s *FS) Resume(ctx context.Context, id string) (blob.Upload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !blobio.ValidUploadID(id) {
		return nil, fmt.Errorf("%w: %q", blob.ErrUploadUnknown, id)
	}
	u := &upload{s: s, id: id, dir: filepath.Join(s.uploads, id)}
	defer s.uploadLocks.Lock(id)()
	var err error
	if u.label, err = os.ReadFile(filepath.Join(u.dir, labelFile)); err != nil {
		return nil, u.missing(err)
	}
	fi, err := os.Stat(filepath.Join(u.dir, dataFile))
	if err != nil {
		return nil, u.missing(err)
	}
	u.size, u.mod = fi.Size(), fi.ModTime()
	if u.hash = readState(u.dir, u.size); u.hash == nil {
		if err := u.rehash(ctx); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// readState returns the saved hash state if it covers size bytes, else
// nil: a missing, stale or damaged state is rebuilt from the data.
func readState(dir string, size int64) *blobio.Hasher {
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil
	}
	var st state
	if json.Unmarshal(raw, &st) != nil || st.Size != size {
		return nil
	}
	h := blobio.NewHasher()
	if h.UnmarshalBinary(st.Hash) != nil {
		return nil
	}
	return h
}

func (u *upload) rehash(ctx context.Context) error {
	f, err := os.Open(filepath.Join(u.dir, dataFile))
	if err != nil {
		return u.missing(err)
	}
	defer f.Close()
	h := blobio.NewHasher()
	n, err := blobio.Copy(ctx, h, f, -1)
	if err != nil {
		return fmt.Errorf("blob/fs: hashing upload %s: %w", u.id, err)
	}
	u.size, u.hash = n, h
	// Only saves the next Resume the same work, so a failure is no error.
	_ = writeState(u.dir, u.size, u.hash)
	return nil
}

// writeState replaces the state file atomically. It is not fsynced: a
// state lost in a crash is rebuilt from the data by Resume.
func writeState(dir string, size int64, h *blobio.Hasher) error {
	b, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(state{Size: size, Hash: b})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".new")
	if err := os.WriteFile(tmp, raw, fileMode); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// missing turns "no such file" into ErrUploadUnknown.
func (u *upload) missing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", blob.ErrUploadUnknown, u.id)
	}
	return fmt.Errorf("blob/fs: %w", err)
}

// eachUpload calls fn with the id of every upload directory, in id order.
func (s *FS) eachUpload(ctx context.Context, fn func(id string) error) error {
	entries, err := os.ReadDir(s.uploads)
	if err != nil {
		return fmt.Errorf("blob/fs: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() && blobio.ValidUploadID(e.Name()) {
			if err := fn(e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Uploads implements blob.Ingester, in id order.
func (s *FS) Uploads(ctx context.Context, fn func(blob.UploadInfo) error) error {
	return s.eachUpload(ctx, func(id string) error {
		dir := filepath.Join(s.uploads, id)
		fi, err := os.Stat(filepath.Join(dir, dataFile))
		if err != nil {
			return nil // committed, cancelled or swept meanwhile
		}
		label, err := os.ReadFile(filepath.Join(dir, labelFile))
		if err != nil {
			return nil
		}
		return fn(blob.UploadInfo{ID: id, Label: label, Size: fi.Size(), ModTime: fi.ModTime()})
	})
}

// SweepUploads implements blob.Ingester. It also clears the directory of
// an upload whose commit a crash interrupted after the data had moved.
func (s *FS) SweepUploads(ctx context.Context, olderThan time.Time) (blob.Swept, error) {
	var swept blob.Swept
	err := s.eachUpload(ctx, func(id string) error {
		fi, err := os.Stat(filepath.Join(s.uploads, id, dataFile))
		var n int64
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("blob/fs: %w", err)
		case !fi.ModTime().Before(olderThan):
			return nil
		default:
			n = fi.Size()
		}
		switch err := s.drop(id); {
		case err == nil:
			swept.Add(n)
		case !errors.Is(err, blob.ErrUploadUnknown):
			return err
		}
		return nil
	})
	return swept, err
}

// drop removes an upload: first out of uploads/ in one rename, so that it
// is gone at once for everyone, then from the disk.
func (s *FS) drop(id string) error {
	gone := filepath.Join(s.tmp, "drop-"+blobio.NewUploadID())
	if err := os.Rename(filepath.Join(s.uploads, id), gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", blob.ErrUploadUnknown, id)
		}
		return fmt.Errorf("blob/fs: %w", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("blob/fs: %w", err)
	}
	return nil
}

func (u *upload) ID() string         { return u.id }
func (u *upload) Label() []byte      { return u.label }
func (u *upload) Size() int64        { return u.size }
func (u *upload) ModTime() time.Time { return u.mod }

// Append implements blob.Upload. The data is fsynced before the state
// that covers it is written: a state must never describe bytes a crash
// could lose, or Commit would publish a blob under a digest its content
// does not have.
func (u *upload) Append(ctx context.Context, r io.Reader, max int64) (int64, error) {
	defer u.s.uploadLocks.Lock(u.id)()
	n, err := u.append(ctx, r, max)
	return n, blob.NoSpace(err)
}

func (u *upload) append(ctx context.Context, r io.Reader, max int64) (int64, error) {
	if max < 0 {
		return 0, fmt.Errorf("blob/fs: negative upload limit %d", max)
	}
	if max > 0 && u.size > max {
		return 0, fmt.Errorf("%w: more than %d bytes", blob.ErrTooLarge, max)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(u.dir, dataFile), os.O_WRONLY, 0)
	if err != nil {
		return 0, u.missing(err)
	}
	defer f.Close() // a second Close after the checked one is harmless
	if fi, err := f.Stat(); err != nil {
		return 0, fmt.Errorf("blob/fs: %w", err)
	} else if fi.Size() != u.size {
		return 0, errChanged
	}
	if _, err := f.Seek(u.size, io.SeekStart); err != nil {
		return 0, fmt.Errorf("blob/fs: %w", err)
	}
	// Hash into a copy, kept only if the bytes are.
	next, err := u.hash.Clone()
	if err != nil {
		return 0, fmt.Errorf("blob/fs: %w", err)
	}
	var w io.Writer = f
	if u.s.wrap != nil {
		w = u.s.wrap(f)
	}
	room := int64(-1)
	if max > 0 {
		room = max - u.size
	}
	n, err := blobio.Copy(ctx, io.MultiWriter(next, w), r, room)
	if errors.Is(err, blob.ErrTooLarge) {
		err = fmt.Errorf("%w: more than %d bytes", blob.ErrTooLarge, max)
	}
	if err == nil && n > 0 {
		if err = f.Sync(); err == nil {
			err = writeState(u.dir, u.size+n, next)
		}
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if err != nil {
		// Cut back to where the piece started so it can be retried; the
		// state file still describes exactly that.
		if terr := f.Truncate(u.size); terr != nil {
			return 0, fmt.Errorf("blob/fs: append: %w (and cutting it back failed: %v)", err, terr)
		}
		return 0, fmt.Errorf("blob/fs: append: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("blob/fs: %w", err)
	}
	u.size, u.hash, u.mod = u.size+n, next, fi.ModTime()
	if n > 0 {
		u.mod = u.s.stamp(filepath.Join(u.dir, dataFile), u.mod)
	}
	return n, nil
}

// Commit implements blob.Upload: the checksums come from the hash state,
// and the data file itself becomes the blob.
func (u *upload) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	defer u.s.uploadLocks.Lock(u.id)()
	info, err := u.commit(ctx, expect)
	if err != nil {
		return blob.Info{}, blob.NoSpace(err)
	}
	return info, nil
}

func (u *upload) commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	sums := u.hash.Sums()
	if err := sums.Verify(expect); err != nil {
		return blob.Info{}, err
	}
	data := filepath.Join(u.dir, dataFile)
	f, err := os.OpenFile(data, os.O_WRONLY, 0)
	if err != nil {
		return blob.Info{}, u.missing(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != u.size {
		err = errChanged
	}
	if err == nil {
		// Cheap: Append synced every byte already.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return blob.Info{}, fmt.Errorf("blob/fs: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	if _, err := u.s.place(data, sums.SHA256, u.size); err != nil {
		return blob.Info{}, err
	}
	// The blob is stored, so the commit succeeded whatever happens to the
	// rest of the upload: a directory left without data (a failure or a
	// crash here) is invisible to Resume and Uploads, and the next sweep
	// clears it.
	_ = u.s.drop(u.id)
	return blob.Info{Digest: "sha256:" + sums.SHA256, Size: u.size, Checksums: sums}, nil
}

// Cancel implements blob.Upload.
func (u *upload) Cancel(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer u.s.uploadLocks.Lock(u.id)()
	return u.s.drop(u.id)
}
