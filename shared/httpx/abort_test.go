package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/metrics"
)

// TestAbortIs499: a handler that finds its client gone aborts; Observe
// counts and logs a 499 (no error), every StatusWriter on the way sees
// it (the audit log's too), and the client gets no answer at all, not an
// implicit 200.
func TestAbortIs499(t *testing.T) {
	var log bytes.Buffer
	m := metrics.New()
	var inner *StatusWriter
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner = &StatusWriter{ResponseWriter: w}
		Abort(inner)
	})
	obs := Observe(h, slog.New(slog.NewTextHandler(&log, nil)), m, func(*http.Request) string { return "x" })
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done) // runs once Observe has accounted the request
		obs.ServeHTTP(w, r)
	}))
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "/gone"); err == nil {
		resp.Body.Close()
		t.Fatalf("an aborted request was answered %d", resp.StatusCode)
	}
	<-done
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if got := rec.Body.String(); !strings.Contains(got, `depot_http_requests_total{area="x",code="499",method="GET"} 1`) ||
		strings.Count(got, "depot_http_requests_total{") != 1 {
		t.Fatalf("metrics do not count one 499:\n%s", got)
	}
	if inner.Status != StatusClientClosed {
		t.Fatalf("inner writer status %d", inner.Status)
	}
	if out := log.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, "status=499") {
		t.Fatalf("log:\n%s", out)
	}
}

func TestClientGone(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if ClientGone(r, errors.New("boom")) {
		t.Fatal("a live request's error taken for a client gone")
	}
	ctx, cancel := context.WithCancel(r.Context())
	cancel()
	gone := r.WithContext(ctx)
	for _, err := range []error{fmt.Errorf("put: %w", context.Canceled), &net.OpError{Op: "write", Err: syscall.EPIPE}, io.ErrUnexpectedEOF} {
		if !ClientGone(gone, err) {
			t.Errorf("%v on a canceled request not taken for a client gone", err)
		}
	}
	// A read we cut ourselves (too slow) cancels the context too, but that
	// client is answered.
	for _, err := range []error{format.ErrSlowBody, nil} {
		if ClientGone(gone, err) {
			t.Errorf("%v taken for a client gone", err)
		}
	}
}

// reading is a format whose one route reads its body with format.ReadBody,
// which turns a failed read into a 400 that no longer wraps the cause.
type reading struct{ got chan error }

func (reading) Name() string   { return "reading" }
func (reading) Prefix() string { return "/r" }
func (f reading) Routes() []format.Route {
	return []format.Route{{Method: http.MethodPut, Path: "/x",
		Write: func(_ context.Context, r *format.Request, _ *format.Writer) (*format.Response, error) {
			_, err := format.ReadBody(r, 1<<20)
			f.got <- err
			return nil, err
		}}}
}
func (reading) Error(_ *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, "", format.PlainText)
}

// TestBrokenBodyIs499: a client that goes away mid-body is a 499 even when
// the handler made a 400 of the failed read (the body itself noticed the
// connection breaking), not an answer to nobody.
func TestBrokenBodyIs499(t *testing.T) {
	m := metrics.New()
	f := reading{got: make(chan error, 1)}
	h := NewFormatHandler(testServer(f, &format.Writer{}), "/r", nil)
	obs := Observe(h, slog.New(slog.NewTextHandler(io.Discard, nil)), m, func(*http.Request) string { return "r" })
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done) // runs once Observe has accounted the request
		obs.ServeHTTP(w, r)
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /r/x HTTP/1.1\r\nHost: depot\r\nContent-Length: 1000\r\n\r\nonly part of it")
	conn.Close()
	<-done
	var fe *format.Error
	if err := <-f.got; !errors.As(err, &fe) || fe.Status() != http.StatusBadRequest {
		t.Fatalf("the handler read %v, want the 400 ReadBody makes of a broken body", err)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if got := rec.Body.String(); !strings.Contains(got, `depot_http_requests_total{area="r",code="499",method="PUT"} 1`) {
		t.Fatalf("metrics do not count one 499:\n%s", got)
	}
}
