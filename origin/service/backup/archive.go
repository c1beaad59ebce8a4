// Package backup writes and reads Depot's backup archives, and runs the
// leader's backup and restore jobs (service.go).
//
// An archive is a tar stream compressed with zstd:
//
//	depot-backup.json        the header: format, Depot version, backup id, time,
//	                         the metadata's log index, its size and SHA-256, and
//	                         how many blobs follow and their bytes
//	metadata.snap            the metadata store's snapshot stream at that index
//	blobs/sha256/<hex>       each blob the metadata references (with artifacts)
//	depot-backup-end.json    the end: the counts again, so that a truncated
//	                         archive is told from a whole one
//
// Every entry is checked when read: the metadata against the header's
// SHA-256 and size, each blob against its name (content addressed), the
// end against the header; zstd's frame checksums catch the rest. Reading
// needs no memory beyond a buffer, whatever the archive's size.
package backup

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Format is the archive format's version.
const Format = 1

// Entry names.
const (
	headerName   = "depot-backup.json"
	metadataName = "metadata.snap"
	blobPrefix   = "blobs/sha256/"
	endName      = "depot-backup-end.json"
)

// Header describes an archive.
type Header struct {
	Format           int       `json:"format"`
	Version          string    `json:"depot_version"`
	BackupID         string    `json:"backup_id"`
	CreatedAt        time.Time `json:"created_at"`
	Index            uint64    `json:"index"` // the metadata's log index
	IncludeArtifacts bool      `json:"include_artifacts"`
	MetadataSize     int64     `json:"metadata_size"`
	MetadataSHA256   string    `json:"metadata_sha256"`
	Blobs            int64     `json:"blobs"`
	BlobBytes        int64     `json:"blob_bytes"`
}

// end closes an archive: what was written.
type end struct {
	BackupID string `json:"backup_id"`
	Blobs    int64  `json:"blobs"`
	Bytes    int64  `json:"blob_bytes"`
}

// Writer writes an archive.
type Writer struct {
	zw  *zstd.Encoder
	tw  *tar.Writer
	hdr Header
	// blobs and bytes written so far.
	blobs, bytes int64
	at           time.Time
}

// NewWriter starts an archive on w with its header and metadata (read
// from meta, of the header's size and SHA-256).
func NewWriter(w io.Writer, hdr Header, meta io.Reader) (*Writer, error) {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	hdr.Format = Format
	aw := &Writer{zw: zw, tw: tar.NewWriter(zw), hdr: hdr, at: hdr.CreatedAt}
	raw, _ := json.Marshal(hdr)
	if err := aw.entry(headerName, int64(len(raw)), strings.NewReader(string(raw))); err != nil {
		return nil, err
	}
	if err := aw.entry(metadataName, hdr.MetadataSize, meta); err != nil {
		return nil, err
	}
	return aw, nil
}

func (aw *Writer) entry(name string, size int64, r io.Reader) error {
	if err := aw.tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o600, ModTime: aw.at, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	n, err := io.Copy(aw.tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, want %d", name, n, size)
	}
	return err
}

// Blob adds a blob of size bytes read from r; its content must hash to
// digest ("sha256:<hex>"), or the archive is refused.
func (aw *Writer) Blob(digest string, size int64, r io.Reader) error {
	hx, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hx) != 64 {
		return fmt.Errorf("blob %q: not a sha256 digest", digest)
	}
	h := sha256.New()
	if err := aw.entry(blobPrefix+hx, size, io.TeeReader(r, h)); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != hx {
		return fmt.Errorf("blob %s: its bytes do not hash to it", digest)
	}
	aw.blobs++
	aw.bytes += size
	return nil
}

// Close ends the archive (the end entry, the tar and zstd streams).
func (aw *Writer) Close() error {
	if aw.blobs != aw.hdr.Blobs || aw.bytes != aw.hdr.BlobBytes {
		return fmt.Errorf("%d blobs (%d bytes) written, the header says %d (%d)", aw.blobs, aw.bytes, aw.hdr.Blobs, aw.hdr.BlobBytes)
	}
	raw, _ := json.Marshal(end{BackupID: aw.hdr.BackupID, Blobs: aw.blobs, Bytes: aw.bytes})
	if err := aw.entry(endName, int64(len(raw)), strings.NewReader(string(raw))); err != nil {
		return err
	}
	if err := aw.tw.Close(); err != nil {
		return err
	}
	return aw.zw.Close()
}

// ErrCorrupt wraps every reason an archive is refused.
var ErrCorrupt = errors.New("the backup archive is corrupt or truncated")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Visitor is told of an archive's entries as Read checks them: the
// metadata, each blob. A reader given is the entry's content, to be read
// to its end (or not at all); the entry is checked after it returns, and
// an entry that fails its check fails the read, so a visitor that acts
// must be able to take it back (Read a first time with a nil visitor to
// check the whole archive before acting).
type Visitor struct {
	Header   func(h Header) error
	Metadata func(r io.Reader) error
	Blob     func(digest string, size int64, r io.Reader) error
}

// maxSmall bounds the header and end entries.
const maxSmall = 64 << 10

// Read reads and checks a whole archive from r, calling v's functions
// (any may be nil): the header it found, or an error wrapping ErrCorrupt
// (or v's own).
func Read(r io.Reader, v Visitor) (Header, error) {
	var hdr Header
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return hdr, corrupt("%v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	next := func() (*tar.Header, error) {
		th, err := tr.Next()
		if err == io.EOF {
			return nil, corrupt("it ends before %s", endName)
		}
		if err != nil {
			return nil, corrupt("%v", err)
		}
		if th.Typeflag != tar.TypeReg || th.Size < 0 {
			return nil, corrupt("unexpected entry %q", th.Name)
		}
		return th, nil
	}
	small := func(th *tar.Header, into any) error {
		if th.Size > maxSmall {
			return corrupt("%s is %d bytes", th.Name, th.Size)
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			return corrupt("%s: %v", th.Name, err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return corrupt("%s: %v", th.Name, err)
		}
		return nil
	}
	th, err := next()
	if err != nil {
		return hdr, err
	}
	if th.Name != headerName {
		return hdr, corrupt("it begins with %q, not %s: not a Depot backup", th.Name, headerName)
	}
	if err := small(th, &hdr); err != nil {
		return hdr, err
	}
	if hdr.Format != Format {
		return hdr, corrupt("format %d; this Depot reads format %d", hdr.Format, Format)
	}
	if v.Header != nil {
		if err := v.Header(hdr); err != nil {
			return hdr, err
		}
	}
	if th, err = next(); err != nil {
		return hdr, err
	}
	if th.Name != metadataName || th.Size != hdr.MetadataSize {
		return hdr, corrupt("%q (%d bytes) where the metadata (%d bytes) belongs", th.Name, th.Size, hdr.MetadataSize)
	}
	if err := checked(tr, th.Size, sha256.New(), hdr.MetadataSHA256, v.Metadata); err != nil {
		return hdr, fmt.Errorf("metadata: %w", err)
	}
	var blobs, bytes int64
	for {
		if th, err = next(); err != nil {
			return hdr, err
		}
		if th.Name == endName {
			break
		}
		hx, ok := strings.CutPrefix(th.Name, blobPrefix)
		if !ok || len(hx) != 64 || strings.Trim(hx, "0123456789abcdef") != "" {
			return hdr, corrupt("unexpected entry %q", th.Name)
		}
		digest := "sha256:" + hx
		var visit func(io.Reader) error
		if v.Blob != nil {
			visit = func(r io.Reader) error { return v.Blob(digest, th.Size, r) }
		}
		if err := checked(tr, th.Size, sha256.New(), hx, visit); err != nil {
			return hdr, fmt.Errorf("blob %s: %w", digest, err)
		}
		blobs++
		bytes += th.Size
	}
	var e end
	if err := small(th, &e); err != nil {
		return hdr, err
	}
	if e.BackupID != hdr.BackupID || e.Blobs != blobs || e.Bytes != bytes || blobs != hdr.Blobs || bytes != hdr.BlobBytes {
		return hdr, corrupt("%d blobs (%d bytes) read; the archive says %d (%d)", blobs, bytes, hdr.Blobs, hdr.BlobBytes)
	}
	return hdr, nil
}

// checked reads an entry of size bytes through fn (or discards it),
// then wants it to hash to want (hex).
func checked(r io.Reader, size int64, h hash.Hash, want string, fn func(io.Reader) error) error {
	lr := io.TeeReader(io.LimitReader(r, size), h)
	var err error
	if fn != nil {
		err = fn(lr)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, lr) // what fn left
		if err != nil {
			err = corrupt("%v", err)
		}
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return corrupt("its bytes hash to %s, not %s", got, want)
	}
	return nil
}
