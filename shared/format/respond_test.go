package format

import (
	"context"
	"log/slog"
	"net/http"
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
