package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// MaxLabelSize bounds an upload's label: it is a format's small record of
// whose upload it is, not content.
const MaxLabelSize = 4 << 10

// ErrUploadUnknown is returned for an upload id that does not exist (never
// did, or was committed, cancelled or swept).
var ErrUploadUnknown = errors.New("blob: upload unknown")

// Ingester keeps uploads that arrive in pieces (OCI chunked uploads) until
// they are committed into the store. Checksums are computed as bytes
// arrive, so a commit neither copies nor re-reads the data.
type Ingester interface {
	// Create starts an empty upload carrying label (at most MaxLabelSize
	// bytes, else ErrTooLarge). Its id is 32 random lowercase hex digits.
	Create(ctx context.Context, label []byte) (Upload, error)
	// Resume continues an upload by id, or returns ErrUploadUnknown.
	Resume(ctx context.Context, id string) (Upload, error)
	// Uploads visits every live upload. An error returned by fn stops
	// the walk and is returned unchanged.
	Uploads(ctx context.Context, fn func(UploadInfo) error) error
	// SweepUploads removes every upload last modified before olderThan
	// and counts them with the bytes they held.
	SweepUploads(ctx context.Context, olderThan time.Time) (Swept, error)
}

// UploadInfo describes a live upload.
type UploadInfo struct {
	ID      string
	Label   []byte
	Size    int64
	ModTime time.Time
}

// Upload is one upload in progress. A value is not safe for concurrent
// use, and callers serialise work on one id across values (Resume twice
// gives two values of the same upload). Once the upload is committed or
// cancelled, every method that changes it returns ErrUploadUnknown.
type Upload interface {
	ID() string
	Label() []byte
	Size() int64
	ModTime() time.Time
	// Append adds r's bytes, at most max bytes in all (0: unlimited;
	// more yields ErrTooLarge). On any error nothing of r is kept, so the
	// caller can retry the same piece.
	Append(ctx context.Context, r io.Reader, max int64) (int64, error)
	// Commit stores the bytes as a blob if every non-empty field of
	// expect matches (case-insensitively) and ends the upload. On
	// ErrDigestMismatch the upload is left as it was: the caller decides
	// whether to cancel it.
	Commit(ctx context.Context, expect Checksums) (Info, error)
	// Cancel drops the upload.
	Cancel(ctx context.Context) error
}
