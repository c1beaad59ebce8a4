package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/depot-registry/depot/shared/format"
)

// StatusClientClosed is nginx's 499: the client went away before it was
// answered. Logs, metrics and the audit log record it; it is never sent.
// A client abort is the client's doing, so it is neither logged as an
// error nor counted as a 5xx.
const StatusClientClosed = format.StatusClientClosed

// ClientGone reports whether err, met while serving r, is the client
// having gone away: the request's context is canceled (net/http does so
// when the connection fails) and err is that cancellation or a broken
// connection. A refusal of our own on a failed read (a too slow body) is
// not: that client is still there to be answered.
func ClientGone(r *http.Request, err error) bool {
	return err != nil && r.Context().Err() != nil && (errors.Is(err, context.Canceled) || connBroken(err))
}

// Abort ends a request whose client went away without answering it:
// every StatusWriter on the way records 499 (unless a status went out
// already), and http.ErrAbortHandler makes net/http drop the connection
// rather than send an implicit 200 to a client that may still be reading.
// It does not return.
func Abort(w http.ResponseWriter) {
	for w != nil {
		if sw, ok := w.(*StatusWriter); ok && sw.Status == 0 {
			sw.Status = StatusClientClosed
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	panic(http.ErrAbortHandler)
}

// requestBody is a format request's body. It notices the connection
// breaking mid-body (the client went away during an upload), and it
// declares the length the client announced, so an upload that cannot fit
// is refused before it is read (format.Sized).
type requestBody struct {
	r      io.Reader
	n      int64 // Content-Length; -1 when unknown
	broken bool  // read by the handler's goroutine once it returns
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && connBroken(err) {
		b.broken = true
	}
	return n, err
}

// Size is the declared length, -1 when unknown.
func (b *requestBody) Size() int64 { return b.n }

// connBroken reports whether a read from the client failed because the
// connection ended or broke before the body did. Refusals of our own (a
// size limit, a too slow body) are not breaks.
func connBroken(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
