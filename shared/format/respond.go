package format

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// Small rendered answers, the same for every format.

// JSON answers v as a small JSON document (plain data: it cannot fail to
// encode).
func JSON(status int, v any) *Response {
	resp := NewResponse(status)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, _ = json.Marshal(v)
	return resp
}

// Text answers a small plain-text document.
func Text(status int, body string) *Response {
	resp := NewResponse(status)
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Body = []byte(body)
	return resp
}

// revalidate gives a read's rendered document (a 200 with a Body: an
// index, a packument, repodata, a metadata file...) a strong ETag of its
// bytes, unless its format tagged it already (with the digest its clients
// check it against), and answers a GET or HEAD that has the tag already
// 304 with no body, so clients revalidate indexes rather than fetch them
// again; Server.Serve does it for every format, on every node. A format
// that dates a document (Last-Modified) has it answered 304 as well to a
// client that revalidates by date (If-Modified-Since) and sends no tag
// (see unmodified); the date must move forward with every change of the
// document. Such documents change with every write: no-cache, unless the
// format says otherwise. The tag is of the bytes sent: a document naming
// absolute URLs has one per host. Blobs are tagged by their formats and
// revalidated by the transports.
func revalidate(r *Request, resp *Response) {
	if resp.Status != http.StatusOK || resp.Blob != nil || resp.Abort || resp.Upstream {
		return
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		sum := sha256.Sum256(resp.Body)
		etag = `"` + hex.EncodeToString(sum[:16]) + `"`
		resp.Header.Set("ETag", etag)
	}
	if resp.Header.Get("Cache-Control") == "" {
		resp.Header.Set("Cache-Control", "no-cache")
	}
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.Header == nil {
		return
	}
	inm, ims := r.Header.Get("If-None-Match"), ""
	lastModified := resp.Header.Get("Last-Modified")
	if inm == "" && lastModified != "" {
		// Read only when it can decide: a transport that keys answers on
		// the headers read (an edge's remembered answers) then varies on
		// it only for dated documents.
		ims = r.Header.Get("If-Modified-Since")
	}
	if !unmodified(inm, ims, etag, lastModified) {
		return
	}
	// As net/http answers a blob's: no body, none of its headers, and,
	// as it has a tag, no date.
	resp.Status, resp.Body = http.StatusNotModified, nil
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Last-Modified"} {
		resp.Header.Del(h)
	}
}

// unmodified evaluates a GET's or HEAD's preconditions against a
// document's validators in the order RFC 9110 13.2.2 sets: If-None-Match,
// when sent, decides alone (ETagMatches), whatever date comes with it;
// otherwise If-Modified-Since, when it is a valid HTTP date and the
// document has a valid Last-Modified, holds when the document is not
// newer than it. True: the client's copy is current (a 304).
func unmodified(ifNoneMatch, ifModifiedSince, etag, lastModified string) bool {
	if ifNoneMatch != "" {
		return ETagMatches(ifNoneMatch, etag)
	}
	if ifModifiedSince == "" || lastModified == "" {
		return false
	}
	since, err := http.ParseTime(ifModifiedSince)
	if err != nil {
		return false
	}
	modified, err := http.ParseTime(lastModified)
	return err == nil && !modified.After(since)
}

// ETagMatches reports whether an If-None-Match value names etag: "*", or
// a list of tags one of which is etag, compared weakly, as GET and HEAD
// compare them (RFC 9110 13.1.2: W/"x" matches "x").
func ETagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" || etag == "" {
		return false
	}
	if strings.TrimSpace(ifNoneMatch) == "*" {
		return true
	}
	etag = strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(ifNoneMatch, ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == etag {
			return true
		}
	}
	return false
}

// JSONError renders an error as {"error": message}, the shape of the
// clients that read a JSON error (helm's ChartMuseum, conda, NuGet).
func JSONError(e *Error) (string, []byte) {
	b, _ := json.Marshal(map[string]string{"error": e.Message})
	return "application/json", b
}
