package oci

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// getBlob streams a blob linked to the image (HEAD and Range come from
// the transport).
func (f *Format) getBlob(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	digest := r.Param("ref")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	l, ok, err := f.blobLink(repo, n.Image, digest)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, blobUnknown(digest)
	}
	resp := newResp(http.StatusOK)
	resp.Blob = &format.BlobRef{Digest: l.Addr, Size: l.Size, Missing: blobUnknown(digest)}
	resp.Name = "blob"
	resp.Header.Set("Content-Type", "application/octet-stream")
	resp.Header.Set("Docker-Content-Digest", digest)
	resp.Header.Set("ETag", `"`+digest+`"`)
	resp.Header.Set("Cache-Control", "max-age=31536000") // content-addressed
	// Pushed bytes: never sniffed or run by a browser.
	format.SetContentSafety(resp.Header)
	return resp, nil
}

func blobUnknown(digest string) error {
	return withDetail(errf(http.StatusNotFound, codeBlobUnknown, "blob %s is unknown to this repository", digest), map[string]string{"digest": digest})
}

// deleteBlob unlinks a blob from the image; the bytes are collected once
// nothing links them.
func (f *Format) deleteBlob(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	defer f.lockImage(repo, n.Image)()
	digest := r.Param("ref")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, func(v view) (meta.Command, error) {
		if _, ok, err := v.blobLink(n.Image, digest); err != nil || !ok {
			return nil, cmp.Or(err, blobUnknown(digest))
		}
		return &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{format.KVDelete(blobKey(n.Image, digest))}}, nil
	})
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusAccepted)
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// startUpload is POST .../blobs/uploads/: a cross-repository mount, a
// monolithic upload (?digest= with the body), or a new session.
func (f *Format) startUpload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	if mount := r.Query.Get("mount"); mount != "" {
		if resp, err := f.mount(ctx, r, w, n, repo, mount, r.Query.Get("from")); resp != nil || err != nil {
			return resp, err
		}
	} else if digest := r.Query.Get("digest"); digest != "" {
		return f.commit(ctx, r, w, n, repo, digest, r.Body)
	}
	u, err := f.createSession(ctx, w, repo.ID, n.String(), r.Principal.UserID)
	if err != nil {
		return nil, w.WriteErr(err)
	}
	return f.sessionResp(r, n, u, http.StatusAccepted), nil
}

// mount links a blob of another image when the caller may read it there;
// (nil, nil) means "not mountable": the caller gets a session instead.
func (f *Format) mount(ctx context.Context, r *format.Request, w *format.Writer, n ImageName, repo *meta.Repository, digest, from string) (*format.Response, error) {
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	src := n
	if from != "" {
		var err error
		if src, err = ParseName(from); err != nil {
			return nil, nil
		}
	}
	if err := granted(r, src, meta.ActionRead); err != nil {
		// The registry token does not grant pull on the source: when
		// its holder may read there, the client is challenged for it
		// (as distribution does), otherwise it uploads instead.
		if _, rerr := f.Env.Repo(r, src.Repo, meta.ActionRead, Name); rerr == nil {
			return nil, err
		}
		return nil, nil
	}
	srcRepo := repo
	if src.Repo != n.Repo {
		var err error
		if srcRepo, err = f.Env.Repo(r, src.Repo, meta.ActionRead, Name); err != nil {
			return nil, nil // unreadable or absent: say nothing, upload instead
		}
	}
	l, ok, err := f.blobLink(srcRepo, src.Image, digest)
	if err != nil || !ok {
		return nil, err
	}
	// Keep, not Stat: the link about to be committed refers to a blob
	// this request did not write, and a sweep must leave it alone.
	if err := w.Blobs.Keep(ctx, l.Addr); err != nil {
		return nil, nil
	}
	return f.link(ctx, r, w, n, repo, digest, l)
}

// commit stores body as the blob digest (the whole of a monolithic
// upload), verifying the digest, and links it.
func (f *Format) commit(ctx context.Context, r *format.Request, w *format.Writer, n ImageName, repo *meta.Repository, digest string, body io.Reader) (*format.Response, error) {
	want, err := expected(digest)
	if err != nil {
		return nil, err
	}
	info, err := w.PutBlob(ctx, body, want)
	if err != nil {
		return nil, storeErr(w, err, digest)
	}
	return f.link(ctx, r, w, n, repo, digest, blobLink{Addr: info.Digest, Size: info.Size})
}

// expected is what a client's digest says the blob's checksum is.
func expected(digest string) (blob.Checksums, error) {
	algo, hx, err := ParseDigest(digest)
	if err != nil {
		return blob.Checksums{}, err
	}
	if algo == "sha512" {
		return blob.Checksums{SHA512: hx}, nil
	}
	return blob.Checksums{SHA256: hx}, nil
}

// storeErr gives the spec's errors for bytes that could not be stored.
func storeErr(w *format.Writer, err error, digest string) error {
	switch {
	case errors.Is(err, blob.ErrDigestMismatch):
		return withDetail(errf(http.StatusBadRequest, codeDigestInvalid, "the uploaded content does not match digest %s", digest), map[string]string{"digest": digest})
	case errors.Is(err, blob.ErrTooLarge):
		return errf(http.StatusRequestEntityTooLarge, codeSizeInvalid, "blob exceeds the upload limit of %d bytes", w.MaxUpload)
	case errors.Is(err, blob.ErrUploadUnknown):
		// Swept or closed by a request that got in between.
		return errf(http.StatusNotFound, codeBlobUploadUnknown, "upload not found")
	}
	return err
}

// link records that the image may use the blob: one KV command, or none
// when the image has that link already (a layer pushed again).
func (f *Format) link(ctx context.Context, r *format.Request, w *format.Writer, n ImageName, repo *meta.Repository, digest string, l blobLink) (*format.Response, error) {
	idx, err := f.decide(ctx, w, repo, func(v view) (meta.Command, error) {
		if have, ok, err := v.blobLink(n.Image, digest); err != nil || (ok && have == l) {
			return nil, err
		}
		op := format.KVSet(blobKey(n.Image, digest), l)
		op.Blobs = []string{l.Addr} // the link keeps the blob from garbage collection
		return &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{op}}, nil
	})
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusCreated)
	setIndex(resp, idx)
	resp.Header.Set("Location", nameURL(r, n, "blobs", digest))
	resp.Header.Set("Docker-Content-Digest", digest)
	return resp, nil
}

func (f *Format) sessionResp(r *format.Request, n ImageName, u blob.Upload, status int) *format.Response {
	resp := newResp(status)
	resp.Header.Set("Location", nameURL(r, n, "blobs", "uploads", u.ID()))
	resp.Header.Set("Docker-Upload-UUID", u.ID())
	resp.Header.Set("Range", rangeHeader(u))
	resp.Header.Set("Content-Length", "0")
	return resp
}

// session resolves the session a request addresses and locks it; the
// caller unlocks.
func (f *Format) session(ctx context.Context, r *format.Request, w *format.Writer) (ImageName, *meta.Repository, blob.Upload, func(), error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return n, nil, nil, nil, err
	}
	id := r.Param("ref")
	if !ValidUploadID(id) {
		return n, nil, nil, nil, errf(http.StatusNotFound, codeBlobUploadUnknown, "upload %s not found", id)
	}
	unlock := f.sessions.Lock(id)
	u, err := f.openSession(ctx, w, id, repo.ID, n.String(), r.Principal.UserID)
	if err != nil {
		unlock()
		return n, nil, nil, nil, err
	}
	return n, repo, u, unlock, nil
}

func (f *Format) uploadStatus(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, _, u, unlock, err := f.session(ctx, r, w)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return f.sessionResp(r, n, u, http.StatusNoContent), nil
}

// patchUpload appends a chunk. With Content-Range the chunk must start
// where the data ends (else 416 and the current range) and be as long as
// it says; without one (docker streaming) the body is appended as is.
func (f *Format) patchUpload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, _, u, unlock, err := f.session(ctx, r, w)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := f.appendChunk(ctx, r, w, n, u); err != nil {
		return nil, err
	}
	return f.sessionResp(r, n, u, http.StatusAccepted), nil
}

// appendChunk adds the request body to the upload; a chunk refused for
// any reason leaves the upload as it was.
func (f *Format) appendChunk(ctx context.Context, r *format.Request, w *format.Writer, n ImageName, u blob.Upload) error {
	// Session data is on the data disk too: the free-space guard applies.
	body, err := w.GuardUpload(r.Body, r.ContentLength)
	if err != nil {
		return err
	}
	if cr := r.Header.Get("Content-Range"); cr != "" {
		start, end, ok := ParseContentRange(cr)
		if !ok || start != u.Size() {
			e := errf(http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, "chunk range %q does not continue the upload at byte %d", cr, u.Size())
			return withHeader(e, "Location", nameURL(r, n, "blobs", "uploads", u.ID()), "Range", rangeHeader(u), "Docker-Upload-UUID", u.ID())
		}
		body = &exactly{r: body, want: end - start + 1}
	}
	_, err = u.Append(ctx, body, w.MaxUpload)
	var ce *chunkSizeError
	if errors.As(err, &ce) {
		return errf(http.StatusBadRequest, codeSizeInvalid, "%s", ce.Error())
	}
	return storeErr(w, w.WriteErr(err), "")
}

// exactly fails a body that is not want bytes long, which makes the
// ingester drop the chunk. It reads at most one byte past want.
type exactly struct {
	r         io.Reader
	want, got int64
}

type chunkSizeError struct{ got, want int64 }

func (e *chunkSizeError) Error() string {
	if e.got > e.want {
		return fmt.Sprintf("chunk is longer than the %d bytes Content-Range says", e.want)
	}
	return fmt.Sprintf("chunk is %d bytes, Content-Range says %d", e.got, e.want)
}

func (x *exactly) Read(p []byte) (int, error) {
	if left := x.want - x.got + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := x.r.Read(p)
	x.got += int64(n)
	switch {
	case x.got > x.want:
		return n, &chunkSizeError{got: x.got, want: x.want}
	case err == io.EOF && x.got < x.want:
		return n, &chunkSizeError{got: x.got, want: x.want}
	}
	return n, err
}

// putUpload closes a session, optionally with a last chunk, checking the
// whole blob against the digest; the checksums were computed as the bytes
// came, so the data is not read again.
func (f *Format) putUpload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, repo, u, unlock, err := f.session(ctx, r, w)
	if err != nil {
		return nil, err
	}
	defer unlock()
	digest := r.Query.Get("digest")
	want, err := expected(digest)
	if err != nil {
		return nil, err
	}
	if err := f.appendChunk(ctx, r, w, n, u); err != nil {
		return nil, err
	}
	info, err := u.Commit(ctx, want)
	if errors.Is(err, blob.ErrDigestMismatch) {
		// The bytes are wrong: start over rather than keep them, even if
		// the client has gone.
		_ = u.Cancel(context.WithoutCancel(ctx))
	}
	if err != nil {
		return nil, storeErr(w, w.WriteErr(err), digest)
	}
	return f.link(ctx, r, w, n, repo, digest, blobLink{Addr: info.Digest, Size: info.Size})
}

func (f *Format) cancelUpload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	_, _, u, unlock, err := f.session(ctx, r, w)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := u.Cancel(ctx); err != nil {
		return nil, storeErr(w, err, "")
	}
	return newResp(http.StatusNoContent), nil
}
