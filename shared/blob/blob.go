package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
)

// Checksums of one blob, lowercase hex.
type Checksums struct {
	MD5    string `json:"md5"`
	SHA1   string `json:"sha1"`
	SHA256 string `json:"sha256"`
	SHA512 string `json:"sha512,omitempty"`
}

// Verify compares every non-empty field of expect with c, ignoring case
// because clients (e.g. Maven .sha1 files) sometimes send uppercase hex;
// a difference is ErrDigestMismatch.
func (c Checksums) Verify(expect Checksums) error {
	pairs := [...]struct{ name, want, got string }{
		{"md5", expect.MD5, c.MD5},
		{"sha1", expect.SHA1, c.SHA1},
		{"sha256", expect.SHA256, c.SHA256},
		{"sha512", expect.SHA512, c.SHA512},
	}
	for _, p := range pairs {
		if p.want != "" && !strings.EqualFold(p.want, p.got) {
			return fmt.Errorf("%w: %s is %s, expected %s", ErrDigestMismatch, p.name, p.got, p.want)
		}
	}
	return nil
}

// Info describes a stored blob.
type Info struct {
	Digest    string // "sha256:<hex>"
	Size      int64
	Checksums Checksums
}

var (
	// ErrNotFound is returned when the addressed blob does not exist.
	ErrNotFound = errors.New("blob: not found")
	// ErrTooLarge is returned when the content exceeds PutOptions.MaxSize
	// or an upload's limit.
	ErrTooLarge = errors.New("blob: too large")
	// ErrDigestMismatch is returned when a computed checksum differs from
	// an expected one (PutOptions.Expect, Upload.Commit).
	ErrDigestMismatch = errors.New("blob: digest mismatch")
	// ErrInvalidDigest is returned for a malformed digest string.
	ErrInvalidDigest = errors.New("blob: invalid digest")
	// ErrNoSpace is returned when there is no room for a write: the disk
	// or the quota is full, or free space is below the configured
	// minimum. Nothing is stored.
	ErrNoSpace = errors.New("blob: insufficient storage")
	// ErrUnreplicated is returned by a cluster's write when a new blob
	// could not be copied to a quorum of the origins: the write must not
	// be acknowledged (nothing was committed).
	ErrUnreplicated = errors.New("blob: not on a quorum of the origins")
)

// DiskFull reports whether err is the filesystem saying it is full.
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// NoSpace marks a disk-full error as ErrNoSpace (keeping the cause in the
// chain) and returns any other error unchanged, so callers test one
// sentinel whatever the platform's errno.
func NoSpace(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) || !DiskFull(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoSpace, err)
}

// Putter stores content.
type Putter interface {
	Put(ctx context.Context, r io.Reader, opts PutOptions) (Info, error)
}

// Opener opens a stored blob for reading.
type Opener interface {
	Open(ctx context.Context, digest string) (File, error)
}

// Statter reports the size of a stored blob, or ErrNotFound.
type Statter interface {
	Stat(ctx context.Context, digest string) (int64, error)
}

// Deleter removes a stored blob, or returns ErrNotFound.
type Deleter interface {
	Delete(ctx context.Context, digest string) error
}

// Walker visits every stored blob. An error returned by fn stops the walk
// and is returned unchanged.
type Walker interface {
	Walk(ctx context.Context, fn func(digest string, size int64) error) error
}

// Store is the full blob store.
type Store interface {
	Putter
	Opener
	Statter
	Deleter
	Walker
	Sweeper
}

// File is an open blob: io.ReadSeekCloser plus Size(); also io.ReaderAt.
type File interface {
	io.Reader
	io.Seeker
	io.Closer
	io.ReaderAt
	Size() int64
}

// PutOptions constrain a Put.
type PutOptions struct {
	// MaxSize limits the content length; 0 means unlimited. More bytes than
	// this yield ErrTooLarge and nothing is stored.
	MaxSize int64
	// Expect holds checksums supplied by the client. Any non-empty field
	// must match the computed value, else ErrDigestMismatch and nothing is
	// stored.
	Expect Checksums
}

// DigestChecksums is what a blob stored under digest must hash to: the
// checksum to put in PutOptions.Expect when copying a blob by digest.
func DigestChecksums(digest string) (Checksums, error) {
	algo, hx, err := ParseDigest(digest)
	if err != nil {
		return Checksums{}, err
	}
	if algo == "sha512" {
		return Checksums{SHA512: hx}, nil
	}
	return Checksums{SHA256: hx}, nil
}

// ParseDigest splits a digest into algorithm and hex. It accepts
// "sha256:<64 lowercase hex>" and "sha512:<128 lowercase hex>"; anything
// else yields ErrInvalidDigest. Because only [0-9a-f] is accepted, the hex
// part is always safe to use as a file name.
func ParseDigest(d string) (algo, hex string, err error) {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok {
		return "", "", ErrInvalidDigest
	}
	var want int
	switch algo {
	case "sha256":
		want = 64
	case "sha512":
		want = 128
	default:
		return "", "", ErrInvalidDigest
	}
	if len(hex) != want {
		return "", "", ErrInvalidDigest
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		// Uppercase is rejected so each blob has exactly one name.
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", "", ErrInvalidDigest
		}
	}
	return algo, hex, nil
}
