package format

import (
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Answers: serving an artifact, and the headers and URLs every format sets.

// URL builds an absolute URL under the format prefix from path segments,
// each escaped: the one place index documents get their links from.
func URL(r *Request, prefix string, segments ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(r.BaseURL, "/"))
	b.WriteString(prefix)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// Serve answers with an artifact's bytes and its checksum headers; a GET
// counts as a download. attachment says whether a browser should save
// the file whatever its type (the REST download).
func (d *Env) Serve(r *Request, a *meta.Artifact, attachment bool) (*Response, error) {
	if err := d.Admitted(r, a); err != nil {
		return nil, err
	}
	d.Downloaded(r, a)
	resp := NewResponse(http.StatusOK)
	resp.Blob = &BlobRef{Digest: a.Digest, Size: a.SizeBytes}
	resp.Name, resp.ModTime = path.Base(a.Path), a.UploadedAt
	SetFileHeaders(resp.Header, a, attachment)
	return resp, nil
}

// Admitted asks Admit whether a may be served to r (the security
// policies): nil, or the error the client is answered.
func (d *Env) Admitted(r *Request, a *meta.Artifact) error {
	if d.Admit == nil {
		return nil
	}
	return d.Admit(r, a)
}

// Downloaded notes that r, when a GET, downloads a: the request says so
// (see Request.Downloaded) and OnDownload is told.
func (d *Env) Downloaded(r *Request, a *meta.Artifact) {
	if r.Method != http.MethodGet {
		return
	}
	r.Downloaded = a
	if d.OnDownload != nil {
		d.OnDownload(r, a)
	}
}

// SetContentSafety keeps uploaded content inert in a browser: whatever
// its type (an HTML or SVG file is a valid artifact), it is not sniffed
// and runs no script on the registry's origin, where credentials live.
func SetContentSafety(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
}

// SetChecksumHeaders adds the X-Checksum-* headers that Artifactory and
// Nexus clients know.
func SetChecksumHeaders(h http.Header, c blob.Checksums) {
	h.Set("X-Checksum-Md5", c.MD5)
	h.Set("X-Checksum-Sha1", c.SHA1)
	h.Set("X-Checksum-Sha256", c.SHA256)
	if c.SHA512 != "" {
		h.Set("X-Checksum-Sha512", c.SHA512)
	}
}

// ExpectedChecksums are the checksums a client announced for its upload
// in the X-Checksum-* headers Artifactory and Nexus clients send.
func ExpectedChecksums(h Header) blob.Checksums {
	get := func(k string) string { return strings.ToLower(strings.TrimSpace(h.Get(k))) }
	return blob.Checksums{MD5: get("X-Checksum-Md5"), SHA1: get("X-Checksum-Sha1"),
		SHA256: get("X-Checksum-Sha256"), SHA512: get("X-Checksum-Sha512")}
}

// SetIndex tells the client (and an edge in between) which log index holds
// its write, so it can wait to read it.
func SetIndex(h http.Header, idx uint64) {
	h.Set("X-Depot-Index", strconv.FormatUint(idx, 10))
}
