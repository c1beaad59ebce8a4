package format

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
)

// Request bodies: small documents read whole, uploads streamed within
// their bounds or spilled to scratch space.

// ReadBody reads a small request body (a document, never a file: files
// stream into PutBlob), refusing more than max bytes with 413.
func ReadBody(r *Request, max int64) ([]byte, error) {
	body, err := BodyReader(r, max)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// BodyReader is the request body for a handler that streams it: reading
// past max bytes fails with 413 (at once when Content-Length says so) and
// a failed read with 400 (a body too slow stays ErrSlowBody, a 408).
func BodyReader(r *Request, max int64) (io.Reader, error) {
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	if r.Body == nil {
		return strings.NewReader(""), nil
	}
	return &bodyReader{LimitedReader: io.LimitedReader{R: r.Body, N: max + 1}, max: max}, nil
}

// bodyReader reads at most one byte past max: that byte is the 413.
type bodyReader struct {
	io.LimitedReader
	max int64
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.LimitedReader.Read(p)
	if b.N == 0 {
		return 0, tooLarge(b.max)
	}
	if err != nil && err != io.EOF && !errors.Is(err, ErrSlowBody) {
		err = BadRequest("reading the request body: %v", err)
	}
	return n, err
}

func tooLarge(max int64) error {
	return Errorf(apierr.PayloadTooLarge, "request body exceeds %d bytes", max)
}

// UploadBody is an upload's request body, refused with 413 past max bytes
// (0: no limit of the format's own) or past MaxUpload.
func (d *Writer) UploadBody(r *Request, max int64) (io.Reader, error) {
	limit := int64(1) << 62
	if max > 0 {
		limit = max
	}
	if d.MaxUpload > 0 && d.MaxUpload < limit {
		limit = d.MaxUpload
	}
	return BodyReader(r, limit)
}

// SpillUpload is Spill of the request body (UploadBody, max as there).
func (d *Writer) SpillUpload(r *Request, sub string, max int64) (f *os.File, size int64, remove func(), err error) {
	body, err := d.UploadBody(r, max)
	if err != nil {
		return nil, 0, nil, err
	}
	return d.Spill(body, sub)
}

// Spill copies body into a new file of this node's scratch space (under
// ScratchDir/sub), for a format that must read an upload at random before
// it decides what it is (a zip, a tar to look into). The caller closes
// the file and calls remove; garbage collection clears what a crash
// leaves. A full disk is ErrNoSpace.
func (d *Writer) Spill(body io.Reader, sub string) (f *os.File, size int64, remove func(), err error) {
	dir := filepath.Join(d.ScratchDir, sub)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, 0, nil, err
	}
	f, err = os.CreateTemp(dir, "upload-*")
	if err != nil {
		return nil, 0, nil, d.WriteErr(err)
	}
	remove = func() { f.Close(); os.Remove(f.Name()) }
	if size, err = io.Copy(f, body); err != nil {
		remove()
		return nil, 0, nil, d.WriteErr(err)
	}
	return f, size, remove, nil
}
