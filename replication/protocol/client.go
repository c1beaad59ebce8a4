package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/depot-registry/depot/shared/blob"
)

// ErrResync is an origin saying the reader is further behind than the
// deletions it remembers: read again from 0.
var ErrResync = errors.New("protocol: the origin no longer reaches back that far; resync from 0")

// maxPage bounds the body of one page a client reads.
const maxPage = 512 << 20

// Client is one edge node's side of the protocol: every call goes to the
// origins in turn, from the last that answered.
type Client struct {
	Origins []string // base URLs, e.g. http://origin-1:8080
	NodeID  string
	Token   string // the node's credential
	HTTP    *http.Client
	next    atomic.Int64 // the origin to try first
	fails   atomic.Int64
	changes atomic.Int64
	learned atomic.Pointer[[]string]
}

// Failures counts the feed reads that failed (for metrics).
func (c *Client) Failures() int64 { return c.fails.Load() }

// Changes counts the changes read from the feed (for metrics: what a
// restart or a resync cost).
func (c *Client) Changes() int64 { return c.changes.Load() }

// Read does one read of the feed.
func (c *Client) Read(ctx context.Context, r FeedQuery) (Page, error) {
	q := r.Values()
	var p Page
	err := c.each(func(base string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+Path(c.NodeID, OpFeed)+"?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		resp, err := c.do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		p = Page{}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxPage)).Decode(&p); err != nil {
			return fmt.Errorf("protocol: reading a page: %w", err)
		}
		c.changes.Add(int64(len(p.Changes)))
		return nil
	})
	return p, err
}

// final marks an error that another origin would give too, or after
// which trying another is wrong: Each stops at it.
type final struct{ error }

func (f final) Unwrap() error { return f.error }

// Final marks err as ending Each's round (see Each).
func Final(err error) error { return final{err} }

// Each calls call with the origins' base URLs in turn, from the one that
// answered last (next keeps it), until call returns nil or an error
// marked Final; otherwise it returns every origin's error. Nodes talk to
// the origins through it: the feed, heartbeats, blob fetches, forwarded
// writes.
func Each(origins []string, next *atomic.Int64, call func(base string) error) error {
	var errs []error
	first := int(next.Load())
	for i := range origins {
		n := (first + i) % len(origins)
		err := call(strings.TrimRight(origins[n], "/"))
		var f final
		if err == nil || errors.As(err, &f) {
			next.Store(int64(n))
			if err != nil {
				return f.error
			}
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", origins[n], err))
	}
	return errors.Join(errs...)
}

func (c *Client) each(call func(base string) error) error { return Each(c.OriginList(), &c.next, call) }

// OriginList is where the client goes: the origins it was given, then
// those an origin said the cluster has (SetOrigins).
func (c *Client) OriginList() []string {
	if l := c.learned.Load(); l != nil {
		return *l
	}
	return c.Origins
}

// SetOrigins adds the origins an origin said the cluster has (its
// heartbeat answer) to those the client was given, which stay first.
func (c *Client) SetOrigins(cluster []string) {
	list := slices.Clone(c.Origins)
	for _, o := range cluster {
		if o = strings.TrimRight(o, "/"); o != "" && !slices.Contains(list, o) {
			list = append(list, o)
		}
	}
	c.learned.Store(&list)
}

// ErrRefused is the origins refusing the node's credential (401), or
// what it asked for this node id (403).
var ErrRefused = errors.New("protocol: the origin refused this node")

// do sends req with the node's credential. A 2xx answer is returned to
// be read and closed; 410 is ErrResync, 404 blob.ErrNotFound, 401 and
// 403 ErrRefused, and any
// other 4xx a refusal another origin would repeat (Final); a 5xx or a
// failed connection lets Each try the next origin.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set(VersionHeader, strconv.Itoa(Version))
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, final{err}
		}
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	err = fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusGone:
		return nil, final{fmt.Errorf("%w (%w)", ErrResync, err)}
	case resp.StatusCode == http.StatusNotFound:
		return nil, final{fmt.Errorf("%w (%w)", blob.ErrNotFound, err)}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, final{fmt.Errorf("%w (%w)", ErrRefused, err)}
	case resp.StatusCode/100 == 4:
		return nil, final{err}
	}
	return nil, err
}

// SendEvents gives an origin a batch of downloads (at most MaxEvents).
func (c *Client) SendEvents(ctx context.Context, ds []Download) (EventsAnswer, error) {
	var a EventsAnswer
	err := c.post(ctx, OpEvents, Events{Downloads: ds}, &a)
	return a, err
}

// SendViolations gives an origin the downloads the node refused by a
// policy.
func (c *Client) SendViolations(ctx context.Context, vs []Violation) (EventsAnswer, error) {
	var a EventsAnswer
	err := c.post(ctx, OpEvents, Events{Violations: vs}, &a)
	return a, err
}

// Heartbeat reports the node to an origin and returns what it should
// serve.
func (c *Client) Heartbeat(ctx context.Context, r Report) (Assignment, error) {
	var a Assignment
	err := c.post(ctx, OpHeartbeat, r, &a)
	return a, err
}

// Vouch asks an origin whether tok is a token it issued and still honours.
func (c *Client) Vouch(ctx context.Context, tok string) (Vouch, error) {
	var v Vouch
	err := c.post(ctx, OpVouch, VouchRequest{Token: tok}, &v)
	if err == nil && v.Valid && v.Claims == nil {
		err = errors.New("protocol: a valid verdict without claims")
	}
	return v, err
}

// CheckPassword has an origin check a password. A throttled check (the
// user or address failed too often) is a refusal.
func (c *Client) CheckPassword(ctx context.Context, user, pass, remote string) (bool, error) {
	var v PasswordVerdict
	err := c.post(ctx, OpPassword, PasswordCheck{Username: user, Password: pass, Remote: remote}, &v)
	return v.Valid, err
}

// post sends in as JSON to the node's endpoint op at an origin and decodes
// the answer into out.
func (c *Client) post(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.each(func(base string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+Path(c.NodeID, op), bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out)
	})
}

// Fetch opens a blob of the node's repositories at an origin, from byte
// offset on (a Range request: a fetch that broke resumes).
func (c *Client) Fetch(ctx context.Context, digest string, offset int64) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := c.each(func(base string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+Path(c.NodeID, OpBlobs)+"/"+digest, nil)
		if err != nil {
			return err
		}
		if offset > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		}
		resp, err := c.do(req)
		if err != nil {
			return err
		}
		if offset > 0 && resp.StatusCode != http.StatusPartialContent {
			resp.Body.Close()
			return fmt.Errorf("protocol: resuming %s at byte %d: %s, want 206", digest, offset, resp.Status)
		}
		body = resp.Body
		return nil
	})
	return body, err
}
