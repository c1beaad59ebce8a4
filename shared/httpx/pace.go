package httpx

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/format"
)

// MinRate cuts request bodies that arrive slower than rate bytes per
// second, averaged over each window: the body must deliver rate*window
// bytes before every window ends. A dribbling client (one byte every ten
// seconds) would otherwise hold a connection, a goroutine and whatever
// its handler holds for as long as it likes; a slow link still gets a
// whole window for each rate*window bytes.
func MinRate(h http.Handler, rate int64, window time.Duration) http.Handler {
	if rate <= 0 || window <= 0 {
		return h
	}
	return paced(h, window, max(1, int64(float64(rate)*window.Seconds())))
}

// BodyDeadline cuts request bodies that have not fully arrived within d
// (small documents: a client that cannot send one in time is holding a
// connection, not uploading).
func BodyDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return paced(h, d, math.MaxInt64)
}

// paced gives each request body a read deadline window away, pushed back
// by another window each time quota more bytes have arrived. A body cut
// off reads as format.ErrSlowBody, and its answer closes the connection.
func paced(h http.Handler, window time.Duration, quota int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(window)) != nil {
			h.ServeHTTP(w, r)
			return
		}
		b := &pacedBody{ReadCloser: r.Body, rc: rc, header: w.Header(), quota: quota, window: window}
		r = r.WithContext(context.WithValue(r.Context(), paceKey{}, b))
		r.Body = b
		h.ServeHTTP(w, r)
		if !b.slow.Load() {
			_ = rc.SetReadDeadline(time.Time{}) // the next request starts afresh
		}
	})
}

type pacedBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	header http.Header
	quota  int64 // bytes due in each window
	got    int64 // bytes in the current window
	window time.Duration
	slow   atomic.Bool
}

type paceKey struct{}

// TooSlow reports whether r's body was cut for arriving too slowly
// (net/http then cancels the request's context, and handlers may report
// that instead of the read error).
func TooSlow(r *http.Request) bool {
	b, ok := r.Context().Value(paceKey{}).(*pacedBody)
	return ok && b.slow.Load()
}

func (b *pacedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.got += int64(n); b.got >= b.quota {
		b.got = 0
		_ = b.rc.SetReadDeadline(time.Now().Add(b.window))
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		// Closing the connection after the answer keeps net/http from
		// waiting for the rest of the body.
		b.header.Set("Connection", "close")
		b.slow.Store(true)
		err = format.ErrSlowBody
	}
	return n, err
}
