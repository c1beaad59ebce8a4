package format

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"testing"

	"github.com/depot-registry/depot/shared/auth"
)

// docs is a format whose read routes answer documents (one tagged by the
// format itself, one that says how to cache it), a blob and an error,
// and whose one write route answers a body too.
type docs struct{}

func (docs) Name() string   { return "docs" }
func (docs) Prefix() string { return "/d" }
func (docs) Error(_ *Request, err error) *Response {
	return ErrorResponse(err, "", PlainText)
}
func (docs) Routes() []Route {
	answer := func(build func() *Response, err error) Handler {
		return func(context.Context, *Request) (*Response, error) {
			if err != nil {
				return nil, err
			}
			return build(), nil
		}
	}
	return []Route{
		{Method: http.MethodGet, Path: "/index", Read: answer(func() *Response { return Text(http.StatusOK, "an index") }, nil)},
		{Method: http.MethodGet, Path: "/tagged", Read: answer(func() *Response {
			resp := Text(http.StatusOK, "tagged")
			resp.Header.Set("ETag", `"md5-of-it"`)
			return resp
		}, nil)},
		{Method: http.MethodGet, Path: "/kept", Read: answer(func() *Response {
			resp := Text(http.StatusOK, "kept")
			resp.Header.Set("Cache-Control", "max-age=60")
			return resp
		}, nil)},
		{Method: http.MethodGet, Path: "/dated", Read: answer(func() *Response {
			resp := Text(http.StatusOK, "dated")
			resp.Header.Set("Last-Modified", dated)
			return resp
		}, nil)},
		{Method: http.MethodGet, Path: "/blob", Read: answer(func() *Response {
			resp := NewResponse(http.StatusOK)
			resp.Blob = &BlobRef{Digest: "sha256:x", Size: 1}
			return resp
		}, nil)},
		{Method: http.MethodGet, Path: "/missing", Read: answer(nil, NotFound("no"))},
		{Method: http.MethodPut, Path: "/index", Write: func(context.Context, *Request, *Writer) (*Response, error) {
			return Text(http.StatusOK, "written"), nil
		}},
	}
}

// dated is the Last-Modified of docs' /dated.
const dated = "Tue, 02 Jan 2024 15:04:05 GMT"

type anyone struct{}

func (anyone) Authenticate(context.Context, string, string) (*auth.Principal, error) {
	return nil, nil
}

// TestDocumentsRevalidate: every read's rendered document is tagged (a
// strong ETag of its bytes, or the format's own) and no-cache unless the
// format says otherwise, and a GET or HEAD whose If-None-Match names
// the tag (in a list, weakly, or "*") is answered 304 with no body and
// no entity headers; another tag gets the document. Blobs (revalidated
// by the transports), errors and writes are left alone.
func TestDocumentsRevalidate(t *testing.T) {
	s := NewServer(docs{}, &Env{}, &Writer{}, anyone{}, slog.New(slog.DiscardHandler))
	serve := func(method, path, inm string) *Response {
		h := http.Header{}
		if inm != "" {
			h.Set("If-None-Match", inm)
		}
		return s.Serve(context.Background(), &Request{Method: method, Path: path, Header: h})
	}
	const tag = `"13f28396e236ef752a2f8e7911c5ecc6"` // sha256("an index"), first 16 bytes
	r := serve("GET", "/index", "")
	if r.Status != 200 || string(r.Body) != "an index" || r.Header.Get("ETag") != tag || r.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("a document: %d %q %v", r.Status, r.Body, r.Header)
	}
	for _, inm := range []string{tag, `"other", ` + tag, "W/" + tag, "*"} {
		for _, method := range []string{"GET", "HEAD"} {
			r := serve(method, "/index", inm)
			if r.Status != http.StatusNotModified || r.Body != nil || r.Header.Get("ETag") != tag || r.Header.Get("Content-Type") != "" {
				t.Errorf("%s with If-None-Match %s: %d %q %v", method, inm, r.Status, r.Body, r.Header)
			}
		}
	}
	if r := serve("GET", "/index", `"other"`); r.Status != 200 || string(r.Body) != "an index" {
		t.Errorf("another tag: %d %q", r.Status, r.Body)
	}
	if r := serve("GET", "/tagged", `"md5-of-it"`); r.Status != http.StatusNotModified || r.Header.Get("ETag") != `"md5-of-it"` {
		t.Errorf("the format's own tag: %d %v", r.Status, r.Header)
	}
	if r := serve("GET", "/kept", ""); r.Header.Get("Cache-Control") != "max-age=60" || r.Header.Get("ETag") == "" {
		t.Errorf("the format's own Cache-Control: %v", r.Header)
	}
	if r := serve("GET", "/blob", "*"); r.Status != 200 || r.Header.Get("ETag") != "" {
		t.Errorf("a blob: %d %v", r.Status, r.Header)
	}
	if r := serve("GET", "/missing", "*"); r.Status != 404 || r.Header.Get("ETag") != "" {
		t.Errorf("an error: %d %v", r.Status, r.Header)
	}
	if r := serve("PUT", "/index", "*"); r.Status != 200 || r.Header.Get("ETag") != "" {
		t.Errorf("a write: %d %v", r.Status, r.Header)
	}
}

// readHeader is a request's headers that remembers which were read.
type readHeader struct {
	http.Header
	read []string
}

func (h *readHeader) Get(k string) string {
	h.read = append(h.read, http.CanonicalHeaderKey(k))
	return h.Header.Get(k)
}

// TestDocumentsRevalidateByDate: a document its format dates (Last-Modified)
// is answered 304, with no body, no entity headers and no date, to a GET or
// HEAD whose If-Modified-Since is not before its date, and 200 to one
// whose date is older or not a date; If-None-Match, when sent, decides
// alone (RFC 9110 13.2.2). An undated document ignores If-Modified-Since
// and does not even read it (an edge's remembered answers vary on the
// headers read).
func TestDocumentsRevalidateByDate(t *testing.T) {
	s := NewServer(docs{}, &Env{}, &Writer{}, anyone{}, slog.New(slog.DiscardHandler))
	serve := func(method, path string, hdr map[string]string) (*Response, []string) {
		h := &readHeader{Header: http.Header{}}
		for k, v := range hdr {
			h.Header.Set(k, v)
		}
		return s.Serve(context.Background(), &Request{Method: method, Path: path, Header: h}), h.read
	}
	r, _ := serve("GET", "/dated", nil)
	if r.Status != 200 || r.Header.Get("Last-Modified") != dated || r.Header.Get("ETag") == "" {
		t.Fatalf("a dated document: %d %v", r.Status, r.Header)
	}
	tag := r.Header.Get("ETag")
	const before, after = "Tue, 02 Jan 2024 15:04:04 GMT", "Wed, 03 Jan 2024 00:00:00 GMT"
	for _, c := range []struct {
		hdr  map[string]string
		want int
	}{
		{map[string]string{"If-Modified-Since": dated}, 304},
		{map[string]string{"If-Modified-Since": after}, 304},
		{map[string]string{"If-Modified-Since": "Tuesday, 02-Jan-24 15:04:05 GMT"}, 304}, // RFC 850, still a date
		{map[string]string{"If-Modified-Since": before}, 200},
		{map[string]string{"If-Modified-Since": "yesterday"}, 200},
		{map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": after}, 200},
		{map[string]string{"If-None-Match": tag, "If-Modified-Since": before}, 304},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			r, _ := serve(method, "/dated", c.hdr)
			if r.Status != c.want {
				t.Errorf("%s with %v: %d, want %d", method, c.hdr, r.Status, c.want)
			}
			if c.want == 304 && (r.Body != nil || r.Header.Get("Content-Type") != "" || r.Header.Get("Last-Modified") != "" || r.Header.Get("ETag") != tag) {
				t.Errorf("%s with %v: 304 with %q %v", method, c.hdr, r.Body, r.Header)
			}
			if c.want == 200 && (string(r.Body) != "dated" || r.Header.Get("Last-Modified") != dated) {
				t.Errorf("%s with %v: 200 with %q %v", method, c.hdr, r.Body, r.Header)
			}
		}
	}
	r, read := serve("GET", "/index", map[string]string{"If-Modified-Since": after})
	if r.Status != 200 || string(r.Body) != "an index" || r.Header.Get("Last-Modified") != "" {
		t.Errorf("an undated document with If-Modified-Since: %d %q %v", r.Status, r.Body, r.Header)
	}
	if slices.Contains(read, "If-Modified-Since") {
		t.Errorf("an undated document read If-Modified-Since (read %v)", read)
	}
	if r, _ := serve("PUT", "/index", map[string]string{"If-Modified-Since": after}); r.Status != 200 || string(r.Body) != "written" {
		t.Errorf("a write with If-Modified-Since: %d %q", r.Status, r.Body)
	}
}

func TestUnmodified(t *testing.T) {
	const lm, tag = "Tue, 02 Jan 2024 15:04:05 GMT", `"a"`
	for _, c := range []struct {
		inm, ims, lm string
		want         bool
	}{
		{"", lm, lm, true},
		{"", "Tue, 02 Jan 2024 15:04:06 GMT", lm, true},
		{"", "Tue, 02 Jan 2024 15:04:04 GMT", lm, false},
		{"", "Tue Jan  2 15:04:05 2024", lm, true}, // asctime
		{"", "", lm, false},
		{"", lm, "", false},
		{"", "not a date", lm, false},
		{"", lm, "not a date", false},
		{tag, "Tue, 02 Jan 2024 15:04:04 GMT", lm, true},
		{`"b"`, lm, lm, false},
		{"*", "", "", true},
	} {
		if got := unmodified(c.inm, c.ims, tag, c.lm); got != c.want {
			t.Errorf("unmodified(%q, %q, %q, %q) = %v", c.inm, c.ims, tag, c.lm, got)
		}
	}
}

func TestETagMatches(t *testing.T) {
	for _, c := range []struct {
		inm, etag string
		want      bool
	}{
		{`"a"`, `"a"`, true},
		{`"b", "a"`, `"a"`, true},
		{`"b",W/"a"`, `"a"`, true},
		{`"a"`, `W/"a"`, true},
		{` * `, `"a"`, true},
		{`"b"`, `"a"`, false},
		{`"ab"`, `"a"`, false},
		{``, `"a"`, false},
		{`"a"`, ``, false},
		{`*`, ``, false},
	} {
		if got := ETagMatches(c.inm, c.etag); got != c.want {
			t.Errorf("ETagMatches(%q, %q) = %v", c.inm, c.etag, got)
		}
	}
}
