// Package upstream streams the requests an edge does not serve itself
// (writes, the REST API) to an origin, unparsed, and the origin's answer
// back, pointing absolute URLs in its Location header at the edge.
package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/replication/feed"
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
func (u *Upstream) Forward(ctx *fasthttp.RequestCtx) (uint64, error) {
	var body io.Reader
	if s := ctx.RequestBodyStream(); s != nil {
		body = s
	} else {
		body = bytes.NewReader(ctx.PostBody())
	}
	var idx uint64
	err := feed.Each(u.Origins(), &u.next, func(base string) error {
		sent := &countingReader{r: body}
		resp, err := u.send(ctx, base, sent)
		switch {
		case err == nil:
			idx = u.answer(ctx, base, resp)
		case sent.n > 0:
			err = feed.Final(err) // part of the body is gone: the client must retry
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return idx, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (u *Upstream) send(ctx *fasthttp.RequestCtx, base string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, string(ctx.Method()), base+string(ctx.RequestURI()), body)
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
