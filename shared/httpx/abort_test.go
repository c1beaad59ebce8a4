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
