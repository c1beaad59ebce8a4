package oci

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// getBlob streams a blob linked to the image (HEAD and Range come from
// the transport).
func (f *Format) getBlob(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r, meta.ActionRead)
	if err != nil {
		return nil, err
	}
	digest := r.Param("ref")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	l, ok := f.blobLink(repo, n.Image, digest)
	if !ok {
		return nil, blobUnknown(digest)
	}
	fh, err := f.d.Blobs.Open(ctx, l.Addr)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, blobUnknown(digest)
	}
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusOK)
	resp.File, resp.Name = fh, "blob"
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
func (f *Format) deleteBlob(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r, meta.ActionDelete)
	if err != nil {
		return nil, err
	}
	defer f.lockImage(repo, n.Image)()
	digest := r.Param("ref")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	if _, ok := f.blobLink(repo, n.Image, digest); !ok {
		return nil, blobUnknown(digest)
	}
	idx, err := f.d.Apply(ctx, &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{format.KVDelete(blobKey(n.Image, digest))}})
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusAccepted)
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// startUpload is POST .../blobs/uploads/: a cross-repository mount, a
// monolithic upload (?digest= with the body), or a new session.
func (f *Format) startUpload(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r, meta.ActionWrite)
	if err != nil {
		return nil, err
	}
	if mount := r.Query.Get("mount"); mount != "" {
		if resp, err := f.mount(ctx, r, n, repo, mount, r.Query.Get("from")); resp != nil || err != nil {
			return resp, err
		}
	} else if digest := r.Query.Get("digest"); digest != "" {
		return f.commit(ctx, r, n, repo, digest, r.Body)
	}
	s, err := f.createSession(repo.ID, n.String(), r.Principal.UserID)
	if err != nil {
		return nil, f.d.WriteErr(err)
	}
	return f.sessionResp(r, n, s, http.StatusAccepted), nil
}

// mount links a blob of another image when the caller may read it there;
// (nil, nil) means "not mountable": the caller gets a session instead.
func (f *Format) mount(ctx context.Context, r *format.Request, n ImageName, repo *meta.Repository, digest, from string) (*format.Response, error) {
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
	if granted(r, src, meta.ActionRead) != nil {
		return nil, nil // the token may not read the source
	}
	srcRepo := repo
	if src.Repo != n.Repo {
		var err error
		if srcRepo, err = f.d.Repo(r, src.Repo, meta.ActionRead, Name); err != nil {
			return nil, nil // unreadable or absent: say nothing, upload instead
		}
	}
	l, ok := f.blobLink(srcRepo, src.Image, digest)
	if !ok {
		return nil, nil
	}
	if _, err := f.d.Blobs.Stat(ctx, l.Addr); err != nil {
		return nil, nil
	}
	return f.link(ctx, r, n, repo, digest, l)
}

// commit stores body as the blob digest (the whole of a monolithic upload
// or a closed session), verifying the digest, and links it.
func (f *Format) commit(ctx context.Context, r *format.Request, n ImageName, repo *meta.Repository, digest string, body io.Reader) (*format.Response, error) {
	algo, hx, err := ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	var want blob.Checksums
	if algo == "sha512" {
		want.SHA512 = hx
	} else {
		want.SHA256 = hx
	}
	info, err := f.d.PutBlob(ctx, body, want)
	switch {
	case errors.Is(err, blob.ErrDigestMismatch):
		return nil, withDetail(errf(http.StatusBadRequest, codeDigestInvalid, "the uploaded content does not match digest %s", digest), map[string]string{"digest": digest})
	case errors.Is(err, blob.ErrTooLarge):
		return nil, errf(http.StatusRequestEntityTooLarge, codeSizeInvalid, "blob exceeds the upload limit of %d bytes", f.d.MaxUpload)
	case err != nil:
		return nil, err
	}
	return f.link(ctx, r, n, repo, digest, blobLink{Addr: info.Digest, Size: info.Size})
}

// link records that the image may use the blob: one KV command, or none
// when the image has that link already (a layer pushed again).
func (f *Format) link(ctx context.Context, r *format.Request, n ImageName, repo *meta.Repository, digest string, l blobLink) (*format.Response, error) {
	var idx uint64
	if have, ok := f.blobLink(repo, n.Image, digest); !ok || have != l {
		var err error
		idx, err = f.d.Apply(ctx, &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{format.KVSet(blobKey(n.Image, digest), l)}})
		if err != nil {
			return nil, err
		}
	}
	resp := newResp(http.StatusCreated)
	setIndex(resp, idx)
	resp.Header.Set("Location", nameURL(r, n, "blobs", digest))
	resp.Header.Set("Docker-Content-Digest", digest)
	return resp, nil
}

func (f *Format) sessionResp(r *format.Request, n ImageName, s *session, status int) *format.Response {
	resp := newResp(status)
	resp.Header.Set("Location", nameURL(r, n, "blobs", "uploads", s.ID))
	resp.Header.Set("Docker-Upload-UUID", s.ID)
	resp.Header.Set("Range", s.rangeHeader())
	resp.Header.Set("Content-Length", "0")
	return resp
}

// session resolves the session a request addresses and locks it; the
// caller unlocks.
func (f *Format) session(r *format.Request) (ImageName, *meta.Repository, *session, func(), error) {
	n, repo, err := f.resolve(r, meta.ActionWrite)
	if err != nil {
		return n, nil, nil, nil, err
	}
	id := r.Param("ref")
	if !ValidUploadID(id) {
		return n, nil, nil, nil, errf(http.StatusNotFound, codeBlobUploadUnknown, "upload %s not found", id)
	}
	unlock := f.sessions.Lock(id)
	s, err := f.openSession(id, repo.ID, n.String(), r.Principal.UserID)
	if err != nil {
		unlock()
		return n, nil, nil, nil, err
	}
	return n, repo, s, unlock, nil
}

func (f *Format) uploadStatus(_ context.Context, r *format.Request) (*format.Response, error) {
	n, _, s, unlock, err := f.session(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return f.sessionResp(r, n, s, http.StatusNoContent), nil
}

// patchUpload appends a chunk. With Content-Range the chunk must start
// where the data ends (else 416 and the current range) and be as long as
// it says; without one (docker streaming) the body is appended as is.
func (f *Format) patchUpload(_ context.Context, r *format.Request) (*format.Response, error) {
	n, _, s, unlock, err := f.session(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := f.appendChunk(r, n, s); err != nil {
		return nil, err
	}
	return f.sessionResp(r, n, s, http.StatusAccepted), nil
}

func (f *Format) appendChunk(r *format.Request, n ImageName, s *session) error {
	// Session data is on the data disk too: the free-space guard applies.
	body, err := f.d.GuardUpload(r.Body, r.ContentLength)
	if err != nil {
		return err
	}
	cr := r.Header.Get("Content-Range")
	if cr == "" {
		_, err := s.appendData(body, f.d.MaxUpload)
		return f.d.WriteErr(err)
	}
	start, end, ok := ParseContentRange(cr)
	if !ok || start != s.size {
		e := errf(http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, "chunk range %q does not continue the upload at byte %d", cr, s.size)
		return withHeader(e, "Location", nameURL(r, n, "blobs", "uploads", s.ID), "Range", s.rangeHeader(), "Docker-Upload-UUID", s.ID)
	}
	before := s.size
	written, err := s.appendData(io.LimitReader(body, end-start+2), f.d.MaxUpload)
	if err != nil {
		return f.d.WriteErr(err)
	}
	if written != end-start+1 {
		if err := s.truncate(before); err != nil {
			return err
		}
		return errf(http.StatusBadRequest, codeSizeInvalid, "chunk is %d bytes, Content-Range says %d", written, end-start+1)
	}
	return nil
}

// putUpload closes a session, optionally with a last chunk, checking the
// whole blob against the digest.
func (f *Format) putUpload(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, s, unlock, err := f.session(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	digest := r.Query.Get("digest")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	if err := f.appendChunk(r, n, s); err != nil {
		return nil, err
	}
	fh, err := s.open()
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	resp, err := f.commit(ctx, r, n, repo, digest, fh)
	if err != nil {
		var oe *ociError
		if errors.As(err, &oe) && oe.err.Code == codeDigestInvalid {
			// The bytes are wrong: start over rather than keep them.
			s.remove()
		}
		return nil, err
	}
	s.remove()
	return resp, nil
}

func (f *Format) cancelUpload(_ context.Context, r *format.Request) (*format.Response, error) {
	_, _, s, unlock, err := f.session(r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.remove()
	resp := newResp(http.StatusNoContent)
	return resp, nil
}
