// Package httpx holds the HTTP plumbing both processes share: middleware
// (request ids, logs, metrics, panics), the URL builder, and the adapters
// that serve format handlers over net/http (and, on edges, fasthttp).
package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/depot-registry/depot/shared/metrics"
)

type ctxKey int

const requestIDKey ctxKey = iota

// RequestID returns the id of the request in ctx.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// NewRequestID makes a request id: 16 hex digits, random (the edge's
// transport uses it too).
func NewRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StatusWriter records the status and size of a response.
type StatusWriter struct {
	http.ResponseWriter
	Status int
	Bytes  int64
}

// WriteHeader records the status.
func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.Bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// AreaFunc names the area of a request for metrics (api, generic, ...).
type AreaFunc func(*http.Request) string

// Observe wraps h with a request id, a structured access log, metrics and
// panic recovery. A panic answers 500 with the request id, which is logged
// with the cause. A request aborted because its client went away (Abort)
// is accounted as 499, not as an error.
func Observe(h http.Handler, log *slog.Logger, m *metrics.Metrics, area AreaFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 64 {
			id = NewRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		sw := &StatusWriter{ResponseWriter: w}
		a := area(r)
		defer func() {
			p := recover()
			aborted := p == http.ErrAbortHandler
			switch {
			case aborted:
				// Nothing was answered: the client went away (Abort) or
				// the response could not be completed.
				if sw.Status == 0 {
					sw.Status = StatusClientClosed
				}
			case p != nil:
				log.Error("panic serving request", "request_id", id, "panic", p, "path", r.URL.Path)
				if sw.Status == 0 {
					http.Error(sw, `{"error":{"code":"INTERNAL","message":"internal error; quote request id `+id+`","details":{"request_id":"`+id+`"}}}`, http.StatusInternalServerError)
				}
			}
			d := time.Since(start)
			if m != nil {
				m.HTTP.Requests.WithLabelValues(a, r.Method, strconv.Itoa(sw.Status)).Inc()
				m.HTTP.Duration.WithLabelValues(a, r.Method).Observe(d.Seconds())
				m.HTTP.Bytes.WithLabelValues(a).Add(float64(sw.Bytes))
			}
			log.Info("request", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.Status,
				"bytes", sw.Bytes, "duration_ms", d.Milliseconds(), "remote", ClientIP(r), "area", a)
			if aborted {
				panic(p) // net/http closes the connection quietly
			}
		}()
		h.ServeHTTP(sw, r)
	})
}
