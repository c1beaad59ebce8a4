package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/version"
)

// maxResponse bounds what the client reads of one answer: the largest
// list the API gives (a page of 100, or every user, token, edge node or
// webhook) is far below it.
const maxResponse = 16 << 20

// apiPrefix is where the REST API lives under the base URL.
const apiPrefix = "/api/v1"

// Client calls the REST API of one Depot origin (or an edge in front of
// one) with one credential. Every request and every answer goes through
// do: the rules are the server's, the client only carries them.
type Client struct {
	base  string // scheme://host[:port][/path], no trailing slash, no /api/v1
	token string // Bearer credential; "" calls anonymously
	http  *http.Client
}

// APIError is an answer of the API other than 2xx: its status and the
// error body {"error":{"code","message","details"}} when there is one.
type APIError struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *APIError) Error() string {
	switch {
	case e.Message != "" && e.Code != "":
		return fmt.Sprintf("%s (%s)", e.Message, e.Code)
	case e.Message != "":
		return e.Message
	}
	return fmt.Sprintf("the server answered %d %s", e.Status, http.StatusText(e.Status))
}

// NetError is a request that got no answer (no route, refused, timed
// out, TLS failed), or an answer that could not be read.
type NetError struct{ Err error }

func (e *NetError) Error() string { return e.Err.Error() }
func (e *NetError) Unwrap() error { return e.Err }

// ParseBaseURL checks a base URL as given by a user: http or https, a
// host, no query; a trailing slash or /api/v1 is dropped, so both the
// site's address and the API's are taken.
func ParseBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not a base URL such as https://depot.example.com", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("the URL must not carry credentials: use depot login")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), apiPrefix)
	u.RawPath = ""
	return strings.TrimRight(u.String(), "/"), nil
}

// newHTTPClient is the client's transport: the system's roots plus
// those of caFile, and a timeout for each whole request.
func newHTTPClient(caFile string, timeout time.Duration) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		// A redirect would resend the credential elsewhere; the API
		// answers without them, so one is reported as it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// at is c calling another base URL (one stored earlier).
func (c *Client) at(base string) *Client {
	d := *c
	d.base = base
	return &d
}

// withToken is c calling with another credential.
func (c *Client) withToken(token string) *Client {
	d := *c
	d.token = token
	return &d
}

// rawBody is a request body sent as it is (a file), of a media type.
type rawBody struct {
	r           io.Reader
	contentType string
}

// do sends one API request: body (when not nil) as JSON, or as it is
// when a rawBody, the answer's JSON decoded into out (when not nil).
// path is below /api/v1 and is escaped by the caller (pathOf).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	contentType := "application/json"
	if raw, ok := body.(rawBody); ok {
		rd, contentType = raw.r, raw.contentType
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	target := c.base + apiPrefix + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "depot-cli/"+version.Version)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &NetError{err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return &NetError{fmt.Errorf("reading the answer of %s %s: %w", method, target, err)}
	}
	if len(raw) > maxResponse {
		return &NetError{fmt.Errorf("the answer of %s %s is larger than %d MiB", method, target, maxResponse>>20)}
	}
	if resp.StatusCode/100 != 2 {
		return apiError(resp, raw)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &NetError{fmt.Errorf("the answer of %s %s is not the API's JSON (is %s a Depot server?): %v", method, target, c.base, err)}
	}
	return nil
}

// apiError reads the API's error body; an answer without one (a proxy's
// page, a redirect) is described by its status and a little of its text.
func apiError(resp *http.Response, raw []byte) error {
	e := &APIError{Status: resp.StatusCode}
	var b struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &b) == nil && (b.Error.Code != "" || b.Error.Message != "") {
		e.Code, e.Message, e.Details = b.Error.Code, b.Error.Message, b.Error.Details
		return e
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	e.Message = fmt.Sprintf("the server answered %s", resp.Status)
	if loc := resp.Header.Get("Location"); loc != "" {
		e.Message += " (redirect to " + loc + ": give that address with --url)"
	} else if text != "" {
		e.Message += ": " + text
	}
	return e
}

// isStatus reports whether err is an API answer with that status.
func isStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// pathOf joins escaped path segments: ids and names given by users go in
// as one segment each.
func pathOf(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
