package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
)

// FormatHandler serves one format over net/http, under one of its
// prefixes: it turns the request into a format.Request, lets the format's
// Server answer it, and writes the answer, opening a blob it names from
// Blobs.
type FormatHandler struct {
	Server *format.Server
	Prefix string
	Blobs  blob.Opener
	// Upstream, when set, answers the requests the server says only an
	// origin can (a Response marked Upstream), as an edge forwards them.
	Upstream http.Handler
}

// NewFormatHandler mounts s under prefix (its format's prefix or an
// alias); blobs answers the blobs its responses name.
func NewFormatHandler(s *format.Server, prefix string, blobs blob.Opener) *FormatHandler {
	return &FormatHandler{Server: s, Prefix: prefix, Blobs: blobs}
}

func (h *FormatHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := &requestBody{r: r.Body, n: r.ContentLength}
	req := &format.Request{
		Method:        r.Method,
		Prefix:        h.Prefix,
		Path:          strings.TrimPrefix(r.URL.Path, h.Prefix),
		RawPath:       strings.TrimPrefix(r.URL.EscapedPath(), h.Prefix),
		Query:         r.URL.Query(),
		Header:        r.Header,
		Body:          body,
		ContentLength: r.ContentLength,
		BaseURL:       BaseURL(r),
		RemoteAddr:    ClientIP(r),
		RequestID:     RequestID(r.Context()),
		Interrupted:   func(err error) error { return interrupted(r, body, err) },
	}
	resp := h.Server.Serve(r.Context(), req)
	if resp.Upstream && h.Upstream != nil {
		h.Upstream.ServeHTTP(w, r)
		return
	}
	if err := WriteResponse(w, r, resp, h.Blobs); err != nil {
		_ = WriteResponse(w, r, h.Server.Fail(req, err), nil)
	}
}

// interrupted says whether err, met while serving r, came from the
// connection rather than from the handler's own decision.
func interrupted(r *http.Request, body *requestBody, err error) error {
	switch {
	case TooSlow(r):
		// A body cut for being too slow is our refusal (net/http cancels
		// the request's context all the same): it gets its 408.
		return format.ErrSlowBody
	case body.broken || ClientGone(r, err):
		return format.ErrClientGone
	}
	return nil
}

// WriteResponse sends a format response. A blob it names is opened from
// blobs and streamed with Range, If-None-Match and HEAD handled by
// http.ServeContent; if it cannot be opened, nothing is written and the
// error is returned (the blob's Missing error for one that is not there)
// for the caller to answer in its own shape.
func WriteResponse(w http.ResponseWriter, r *http.Request, resp *format.Response, blobs blob.Opener) error {
	if resp.Abort {
		Abort(w)
	}
	if resp.Blob != nil {
		f, err := blobs.Open(r.Context(), resp.Blob.Digest)
		if err != nil {
			if errors.Is(err, blob.ErrNotFound) && resp.Blob.Missing != nil {
				err = resp.Blob.Missing
			}
			return err
		}
		defer f.Close()
		copyHeader(w.Header(), resp.Header)
		http.ServeContent(w, r, resp.Name, resp.ModTime, f)
		return nil
	}
	copyHeader(w.Header(), resp.Header)
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified {
		// Said for HEAD too, which sends no body: the length GET would send.
		w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	if resp.Reason != "" && WriteWithReason(w, r, status, resp.Reason, resp.Body) {
		return nil
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead && len(resp.Body) > 0 {
		_, _ = w.Write(resp.Body)
	}
	return nil
}

// WriteWithReason writes an answer itself on an HTTP/1.x connection, so
// that its status line says reason (net/http writes only the standard
// phrase; pip, Maven and pip-audit show the status line, not the body),
// with w's headers and body, and closes the connection; false when the
// connection cannot be taken over (HTTP/2, a test recorder): the caller
// then writes the answer as usual.
func WriteWithReason(w http.ResponseWriter, r *http.Request, status int, reason string, body []byte) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	h := w.Header().Clone()
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Transfer-Encoding")
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", status, reason)
	_ = h.Write(buf)
	_, _ = buf.WriteString("\r\n")
	if r.Method != http.MethodHead {
		_, _ = buf.Write(body)
	}
	_ = buf.Flush()
	return true
}

// copyHeader sets the response's headers over those already set, but
// merges Vary: what the middleware says the answer varies on (the host
// its absolute URLs are built from, see Forwarded) holds as much as what
// the format says (Accept).
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if k == "Vary" && len(dst[k]) > 0 {
			dst[k] = []string{MergeVary(append(slices.Clone(dst[k]), vs...)...)}
			continue
		}
		dst[k] = vs
	}
}
