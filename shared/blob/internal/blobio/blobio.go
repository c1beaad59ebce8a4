// Package blobio holds what blob store implementations share: hashing
// every checksum in one pass (with a state that can be saved and resumed),
// a bounded, cancellable copy, and upload ids.
package blobio

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"

	"github.com/depot-registry/depot/shared/blob"
)

// Hasher computes every blob.Checksums field over the bytes written to it.
type Hasher struct {
	hs [4]hash.Hash // md5, sha1, sha256, sha512: the order of Sums and of the saved state
}

// NewHasher returns a Hasher that has seen no bytes.
func NewHasher() *Hasher {
	return &Hasher{hs: [4]hash.Hash{md5.New(), sha1.New(), sha256.New(), sha512.New()}}
}

// Write implements io.Writer; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	for _, x := range h.hs {
		x.Write(p)
	}
	return len(p), nil
}

// Sums returns the checksums of what was written so far.
func (h *Hasher) Sums() blob.Checksums {
	sum := func(i int) string { return hex.EncodeToString(h.hs[i].Sum(nil)) }
	return blob.Checksums{MD5: sum(0), SHA1: sum(1), SHA256: sum(2), SHA512: sum(3)}
}

// Clone returns an independent copy: write to it, and keep it only if
// the write is kept.
func (h *Hasher) Clone() (*Hasher, error) {
	c := &Hasher{}
	for i, x := range h.hs {
		y, err := x.(hash.Cloner).Clone()
		if err != nil {
			return nil, err
		}
		c.hs[i] = y.(hash.Hash)
	}
	return c, nil
}

// MarshalBinary saves the state: each hash's own state, length-prefixed.
func (h *Hasher) MarshalBinary() ([]byte, error) {
	var out []byte
	for _, x := range h.hs {
		b, err := x.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// UnmarshalBinary restores a state saved by MarshalBinary; a damaged one
// is an error (each hash checks its own), never a wrong state.
func (h *Hasher) UnmarshalBinary(b []byte) error {
	fresh := NewHasher()
	for _, x := range fresh.hs {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return errors.New("blobio: truncated hash state")
		}
		if err := x.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[k : k+int(n)]); err != nil {
			return fmt.Errorf("blobio: hash state: %w", err)
		}
		b = b[k+int(n):]
	}
	if len(b) != 0 {
		return errors.New("blobio: trailing bytes after hash state")
	}
	h.hs = fresh.hs
	return nil
}

// Copy copies src to dst until EOF, an error, ctx being done, or more than
// room bytes (room < 0: no limit), which it reports as blob.ErrTooLarge
// after reading a single byte too many, so an endless body is not drained.
// ctx is checked between reads; a Read already blocked is up to the
// reader's owner to interrupt.
func Copy(ctx context.Context, dst io.Writer, src io.Reader, room int64) (int64, error) {
	src = ctxReader{ctx: ctx, r: src}
	limited := room >= 0 && room < math.MaxInt64
	if limited {
		src = io.LimitReader(src, room+1)
	}
	n, err := io.CopyBuffer(dst, src, make([]byte, 32<<10))
	if err == nil && limited && n > room {
		err = blob.ErrTooLarge
	}
	return n, err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// NewUploadID returns 32 random lowercase hex digits.
func NewUploadID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails: it crashes the program instead
	return hex.EncodeToString(b)
}

// ValidUploadID reports whether id looks like NewUploadID's: only such
// ids reach a file system.
func ValidUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
