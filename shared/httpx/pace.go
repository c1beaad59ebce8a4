package httpx

import (
	"context"
	"errors"
	"io"
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(window)) == nil {
				b := &pacedBody{ReadCloser: r.Body, rc: rc, header: w.Header(), quota: rate * int64(window/time.Second), window: window}
				defer func() {
					if !b.slow.Load() {
						_ = rc.SetReadDeadline(time.Time{}) // the next request starts afresh
					}
				}()
				r = r.WithContext(context.WithValue(r.Context(), paceKey{}, b))
				r.Body = b
			}
		}
		h.ServeHTTP(w, r)
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
