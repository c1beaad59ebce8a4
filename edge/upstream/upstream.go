// Package upstream streams the requests an edge does not serve itself
// (writes, the REST API) to an origin, unparsed, and the origin's answer
// back, pointing absolute URLs in its Location header at the edge.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/httpx"
)

// Upstream forwards to the origins, trying each in turn when one cannot
// be reached (a request whose body has started to go is not retried).
type Upstream struct {
	Origins func() []string // base URLs, as the node knows them now
	HTTP    *http.Client
	// Credential is the node's: it goes with each forwarded request
	// (httpx.ForwarderHeader), so the origin believes what the edge says
	// of the client (its address, the base URL it used) and builds
	// absolute URLs that point at the edge.
	Credential string
	next       atomic.Int64
}

// hop-by-hop headers are the connection's, not the request's.
var hop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true}

// ErrUnavailable is every origin unreachable.
var ErrUnavailable = errors.New("no origin could be reached")

// Forward sends ctx's request to an origin and writes its answer to ctx.
// It returns the log index the origin's answer carries (X-Depot-Index),
// 0 when none.
//
// An origin may answer before it has read the whole body (a 413, a 401,
// a file that exists already); the HTTP client then goes on reading the
// body in the background, but fasthttp releases the body's stream as soon
// as this handler returns. So before it returns, Forward stops the body
// (no read is running or can start), reads what is left of it from the
// client and discards it (the client sends its whole body before it
// reads the answer), and only then hands the origin's answer on; a body
// that does not end in time closes the connection after the answer.
func (u *Upstream) Forward(ctx *fasthttp.RequestCtx) (uint64, error) {
	b := &body{r: ctx.RequestBodyStream()}
	if b.r == nil {
		b.r = bytes.NewReader(ctx.PostBody())
	}
	if ctx.Request.Header.ContentLength() == 0 {
		b.ended = true
	}
	var idx uint64
	err := protocol.Each(u.Origins(), &u.next, func(base string) error {
		n := b.count()
		resp, err := u.send(ctx, base, b)
		switch {
		case err == nil:
			idx = u.answer(ctx, base, resp)
		case b.count() > n:
			err = protocol.Final(err) // part of the body is gone: the client must retry
		}
		return err
	})
	b.finish(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return idx, nil
}

// body is a request's body as the HTTP client reads it, until finish.
type body struct {
	mu      sync.Mutex
	r       io.Reader
	n       int64
	ended   bool // read to its end
	stopped bool
}

var errStopped = errors.New("the origin has answered; the rest of the body is not sent")

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return 0, errStopped
	}
	if b.ended {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

func (b *body) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Bounds of discarding the rest of a body the origin did not want.
var (
	discardIdle  = 5 * time.Second  // without a byte from the client
	discardTotal = 30 * time.Second // in all
)

// finish stops the body: once it returns no read of the client's stream
// is running and none will start. A body not read to its end is read now
// and discarded, within bounds; one that does not end closes the
// connection once the answer is sent.
func (b *body) finish(ctx *fasthttp.RequestCtx) {
	conn := ctx.Conn()
	interrupted := false
	if !b.mu.TryLock() {
		// A read waits for the client: wake it.
		interrupted = true
		_ = conn.SetReadDeadline(time.Now())
		b.mu.Lock()
	}
	b.stopped = true
	ended := b.ended
	b.mu.Unlock()
	if ended {
		if interrupted {
			_ = conn.SetReadDeadline(time.Time{})
		}
		return
	}
	if ctx.RequestBodyStream() == nil {
		return // it was read whole before the handler
	}
	// A chunked body whose read was cut may have been cut in a chunk's
	// header: it is still read to its end (the client sends its whole
	// body before it reads the answer, and a connection closed under it
	// loses the answer), but the connection is not trusted for another
	// request.
	trusted := !interrupted || ctx.Request.Header.ContentLength() >= 0
	start := time.Now()
	buf := make([]byte, 32<<10)
	for time.Since(start) < discardTotal {
		_ = conn.SetReadDeadline(time.Now().Add(discardIdle))
		_, err := b.r.Read(buf)
		if err == io.EOF {
			_ = conn.SetReadDeadline(time.Time{})
			if !trusted {
				ctx.SetConnectionClose()
			}
			return
		}
		if err != nil {
			break
		}
	}
	ctx.SetConnectionClose()
}

func (u *Upstream) send(ctx *fasthttp.RequestCtx, base string, body io.Reader) (*http.Response, error) {
	// Not ctx: the answer's body is read after the handler returns, when
	// fasthttp has reused ctx.
	req, err := http.NewRequestWithContext(context.Background(), string(ctx.Method()), base+string(ctx.RequestURI()), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(ctx.Request.Header.ContentLength())
	if req.ContentLength < 0 {
		req.ContentLength = -1
	}
	if req.ContentLength == 0 {
		req.Body = http.NoBody
	}
	for k, v := range ctx.Request.Header.All() {
		name := http.CanonicalHeaderKey(string(k))
		if !hop[name] && name != "Host" && name != "Content-Length" && name != httpx.ForwarderHeader {
			req.Header.Add(name, string(v))
		}
	}
	scheme := "http"
	if ctx.IsTLS() {
		scheme = "https"
	}
	req.Header.Set("X-Forwarded-For", ctx.RemoteIP().String())
	req.Header.Set("X-Forwarded-Host", string(ctx.Host()))
	req.Header.Set("X-Forwarded-Proto", scheme)
	if u.Credential != "" {
		req.Header.Set(httpx.ForwarderHeader, u.Credential)
	}
	hc := u.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}

// answer copies the origin's answer to ctx, streaming its body.
func (u *Upstream) answer(ctx *fasthttp.RequestCtx, base string, resp *http.Response) uint64 {
	ctx.SetStatusCode(resp.StatusCode)
	edge := "http://"
	if ctx.IsTLS() {
		edge = "https://"
	}
	edge += string(ctx.Host())
	for k, vs := range resp.Header {
		if hop[k] || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			if k == "Location" && strings.HasPrefix(v, base) {
				v = edge + strings.TrimPrefix(v, base)
			}
			ctx.Response.Header.Add(k, v)
		}
	}
	ctx.SetBodyStream(resp.Body, int(resp.ContentLength)) // closed once sent
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Depot-Index"), 10, 64)
	return idx
}
