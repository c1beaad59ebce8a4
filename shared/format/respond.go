package format

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
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

// Revalidate gives a rendered index an ETag (a digest of its body) and
// answers 304 to a request that has it already, so clients revalidate
// indexes (npm packuments, cargo index files) rather than fetch them
// again. Such indexes change with every write: no-cache.
func Revalidate(r *Request, resp *Response) *Response {
	sum := sha256.Sum256(resp.Body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	resp.Header.Set("ETag", etag)
	resp.Header.Set("Cache-Control", "no-cache")
	if r.Header != nil && r.Header.Get("If-None-Match") == etag {
		resp.Status, resp.Body = http.StatusNotModified, nil
	}
	return resp
}

// JSONError renders an error as {"error": message}, the shape of the
// clients that read a JSON error (helm's ChartMuseum, conda, NuGet).
func JSONError(e *Error) (string, []byte) {
	b, _ := json.Marshal(map[string]string{"error": e.Message})
	return "application/json", b
}
