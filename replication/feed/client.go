package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// The edge's side: reading the feed from the origins and keeping a
// follower store (meta.Store.ApplyChanges) up to date with it.

// ErrResync is an origin saying the reader is further behind than the
// deletions it remembers: read again from 0.
var ErrResync = errors.New("feed: the origin no longer reaches back that far; resync from 0")

// maxPage bounds the body of one page a client reads.
const maxPage = 512 << 20

// Client reads one edge node's feed from the origins, trying each in turn
// from the last that answered.
type Client struct {
	Origins []string // base URLs, e.g. http://origin-1:8080
	NodeID  string
	Token   string // the node's credential
	HTTP    *http.Client
	next    atomic.Int64 // the origin to try first
	fails   atomic.Int64
	changes atomic.Int64
	learned atomic.Pointer[[]string]
	// settling serialises the changes of the replica that can move the
	// node's audience with the Settle after each, so that every move is
	// seen between one Settle's before and after; unsettled keeps the
	// before of one that failed, for the next to start from; settled says
	// whether the replica has been settled once since the client started
	// (a replica from an older version holds every user).
	settling  sync.Mutex
	unsettled *View
	settled   atomic.Bool
}

// Failures counts the feed reads that failed (for metrics).
func (c *Client) Failures() int64 { return c.fails.Load() }

// Changes counts the changes read from the feed (for metrics: what a
// restart or a resync cost).
func (c *Client) Changes() int64 { return c.changes.Load() }

// Read does one read of the feed.
func (c *Client) Read(ctx context.Context, r Request) (Page, error) {
	q := url.Values{"since": {strconv.FormatUint(r.Since, 10)}}
	if r.Repo != "" {
		q.Set("repository_id", r.Repo)
	}
	if len(r.Principals) > 0 {
		q.Set("principals", strings.Join(r.Principals, ","))
	}
	if r.Global {
		q.Set("global", "1")
	}
	var known []string
	for _, k := range Applicable() {
		known = append(known, strconv.Itoa(int(k)))
	}
	q.Set("kinds", strings.Join(known, ","))
	if r.Limit > 0 {
		q.Set("limit", strconv.Itoa(r.Limit))
	}
	if r.Wait > 0 {
		q.Set("wait", strconv.Itoa(int(r.Wait/time.Second)))
	}
	var p Page
	err := c.each(func(base string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/edge-nodes/"+url.PathEscape(c.NodeID)+"/feed?"+q.Encode(), nil)
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
			return fmt.Errorf("feed: reading a page: %w", err)
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

// do sends req with the node's credential. A 2xx answer is returned to
// be read and closed; 410 is ErrResync, 404 blob.ErrNotFound, and any
// other 4xx a refusal another origin would repeat (Final); a 5xx or a
// failed connection lets Each try the next origin.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.Token)
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
	case resp.StatusCode/100 == 4:
		return nil, final{err}
	}
	return nil, err
}

// Sync brings s up to date once: it reads pages from s's applied index
// until one is empty, waiting up to wait for the first change. On
// ErrResync it reads everything again from 0 (Resync).
func Sync(ctx context.Context, c *Client, s *meta.Store, wait time.Duration) error {
	if !c.settled.Load() {
		if err := c.settle(ctx, s, func() error { return nil }); err != nil {
			return err
		}
		c.settled.Store(true)
	}
	for {
		p, err := c.Read(ctx, Request{Since: s.LastApplied(), Wait: wait})
		if errors.Is(err, ErrResync) {
			return c.serially(func() error { return Resync(ctx, c, s) })
		}
		if err != nil {
			return err
		}
		apply := func() error { return s.ApplyFeed(p.Changes, p.Next) }
		if relevant(p.Changes) {
			err = c.settle(ctx, s, apply)
		} else {
			err = c.serially(apply)
		}
		if err != nil {
			return err
		}
		if len(p.Changes) == 0 {
			return nil
		}
		wait = 0
	}
}

// CatchUp reads one repository from 0 into s (a repository newly assigned
// to the node), without moving s's applied index: the feed goes on from
// where it was and brings anything newer.
func CatchUp(ctx context.Context, c *Client, s *meta.Store, repoID string) error {
	var since uint64
	for {
		p, err := c.Read(ctx, Request{Since: since, Repo: repoID})
		if err != nil {
			return err
		}
		if err := s.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
		if len(p.Changes) == 0 || p.Next <= since {
			return nil
		}
		since = p.Next
	}
}

// Resync reads everything the node may see again from 0 and removes what
// is no longer there (deleted while s was too far behind to hear of it).
func Resync(ctx context.Context, c *Client, s *meta.Store) error {
	type rec struct {
		k   meta.Kind
		key string
	}
	seen := map[rec]bool{}
	var since uint64
	for {
		p, err := c.Read(ctx, Request{Since: since})
		if err != nil {
			return err
		}
		for _, ch := range p.Changes {
			seen[rec{ch.Kind, ch.Key}] = !ch.Deleted
		}
		if err := s.ApplyChanges(p.Changes, 0); err != nil {
			return err
		}
		if len(p.Changes) == 0 || p.Next <= since {
			return s.RetainOnly(kinds, func(k meta.Kind, key string) bool { return seen[rec{k, key}] }, max(since, p.Next))
		}
		since = p.Next
	}
}

// Follow keeps s up to date with the feed until ctx ends, long-polling
// with wait and retrying failures with a growing pause (at most 30 s), cut
// short by a signal on retry (the node heard from an origin again). Each
// failure is logged; it returns ctx's error.
func Follow(ctx context.Context, c *Client, s *meta.Store, wait time.Duration, retry <-chan struct{}, log *slog.Logger) error {
	pause := time.Second
	for ctx.Err() == nil {
		err := Sync(ctx, c, s, wait)
		if err == nil || ctx.Err() != nil {
			pause = time.Second
			continue
		}
		c.fails.Add(1)
		log.Warn("change feed: read failed; retrying", "err", err, "retry_in", pause)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		case <-retry:
		}
		pause = min(2*pause, 30*time.Second)
	}
	return ctx.Err()
}

// Reconcile makes the follower hold exactly the assigned repositories: it
// catches up on each assigned one it has not followed yet and drops the
// records of each it followed that is no longer assigned. A catch-up cut
// short is done again next time (pages apply idempotently).
func Reconcile(ctx context.Context, c *Client, s *meta.Store, assigned []string) error {
	followed, err := s.Followed()
	if err != nil || slices.Equal(followed, slices.Sorted(slices.Values(assigned))) {
		return err
	}
	return c.settle(ctx, s, func() error { return reconcile(ctx, c, s, assigned) })
}

// serially makes change to s while no other change is being made (a
// catch-up on a repository given back, which must not interleave with
// feed pages that leave it out).
func (c *Client) serially(change func() error) error {
	c.settling.Lock()
	defer c.settling.Unlock()
	return change()
}

// settle makes change to s, then Settles s's audience. When either
// fails, the next settle starts from this one's before: what moved since
// is caught up then.
func (c *Client) settle(ctx context.Context, s *meta.Store, change func() error) error {
	c.settling.Lock()
	defer c.settling.Unlock()
	before := c.unsettled
	if before == nil {
		v, err := ViewOf(s)
		if err != nil {
			return err
		}
		before = &v
	}
	err := change()
	if err == nil {
		err = Settle(ctx, c, s, *before)
	}
	c.unsettled = nil
	if err != nil {
		c.unsettled = before
	}
	return err
}

func reconcile(ctx context.Context, c *Client, s *meta.Store, assigned []string) error {
	followed, err := s.Followed()
	if err != nil {
		return err
	}
	for _, id := range assigned {
		if slices.Contains(followed, id) {
			continue
		}
		if err := CatchUp(ctx, c, s, id); err != nil {
			return fmt.Errorf("catching up on repository %s: %w", id, err)
		}
		if err := s.SetFollowed(id, true); err != nil {
			return err
		}
	}
	for _, id := range followed {
		if !slices.Contains(assigned, id) {
			if err := s.SetFollowed(id, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// Report is what a node says of itself in a heartbeat (the body of
// POST /api/v1/edge-nodes/:id/heartbeat).
type Report struct {
	AppliedIndex uint64 `json:"applied_index"`
	CachedBytes  int64  `json:"cached_bytes"`
	MissingBlobs int64  `json:"missing_blobs"`
	Version      string `json:"version"`
	// Downloads the node served since its last report: the origin counts
	// them in one go, never a log entry per download.
	Downloads int64 `json:"downloads"`
}

// MaxEvents bounds one batch of downloads a node sends.
const MaxEvents = 1000

// Download is a download a node served, as it reports it: only what it
// witnessed, by ids (the artifact, the principal, the client's address,
// when). The origin builds the event from its own store, for an artifact
// of a repository assigned to the node.
type Download struct {
	ArtifactID string    `json:"artifact_id"`
	UserID     string    `json:"user_id,omitempty"` // "" for anonymous
	Remote     string    `json:"remote,omitempty"`  // the client's address
	At         time.Time `json:"at"`
}

// Events is a batch of downloads a node served (the body of POST
// /api/v1/edge-nodes/:id/events).
type Events struct {
	Downloads []Download `json:"downloads"`
}

// EventsAnswer says how many of a batch the origin took; the others were
// dropped there (its queue was full, the artifact gone, the node past
// its rate) and counted.
type EventsAnswer struct {
	Accepted int `json:"accepted"`
}

// SendEvents gives an origin a batch of downloads (at most MaxEvents).
func (c *Client) SendEvents(ctx context.Context, ds []Download) (EventsAnswer, error) {
	var a EventsAnswer
	err := c.post(ctx, "events", Events{Downloads: ds}, &a)
	return a, err
}

// Assignment is an origin's answer to a heartbeat: what the node serves,
// and how far the origin's log is.
type Assignment struct {
	RepositoryIDs []string `json:"repository_ids"`
	OriginIndex   uint64   `json:"origin_index"`
	// Origins are the API URLs of the cluster's origins that are alive,
	// so a node given one origin finds the others.
	Origins []string `json:"origins,omitempty"`
	// RecordDownloads: the node sends its downloads as events (see
	// POST /edge-nodes/:id/events), those made from RecordDownloadsSince
	// on (zero: all it holds); false: it only counts them.
	RecordDownloads      bool      `json:"record_downloads,omitempty"`
	RecordDownloadsSince time.Time `json:"record_downloads_since,omitempty"`
}

// Heartbeat reports the node to an origin and returns what it should
// serve.
func (c *Client) Heartbeat(ctx context.Context, r Report) (Assignment, error) {
	var a Assignment
	err := c.post(ctx, "heartbeat", r, &a)
	return a, err
}

// VouchRequest asks an origin to verify a JWT presented to the node.
type VouchRequest struct {
	Token string `json:"token"`
}

// Vouch is an origin's verdict on a JWT: Claims when it signed the token,
// the token is unexpired and its login session, if any, is active.
type Vouch struct {
	Valid  bool         `json:"valid"`
	Claims *auth.Claims `json:"claims,omitempty"`
}

// Vouch asks an origin whether tok is a token it issued and still honours.
func (c *Client) Vouch(ctx context.Context, tok string) (Vouch, error) {
	var v Vouch
	err := c.post(ctx, "vouch", VouchRequest{Token: tok}, &v)
	if err == nil && v.Valid && v.Claims == nil {
		err = errors.New("feed: a valid verdict without claims")
	}
	return v, err
}

// PasswordCheck asks an origin whether a password is a user's (an edge
// holds no password hashes): the client's address goes with it, so the
// origin counts a failure against it as well as against the node.
type PasswordCheck struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Remote   string `json:"remote"`
}

// PasswordVerdict is an origin's answer to a PasswordCheck.
type PasswordVerdict struct {
	Valid bool `json:"valid"`
}

// CheckPassword has an origin check a password. A throttled check (the
// user or address failed too often) is a refusal.
func (c *Client) CheckPassword(ctx context.Context, user, pass, remote string) (bool, error) {
	var v PasswordVerdict
	err := c.post(ctx, "password", PasswordCheck{Username: user, Password: pass, Remote: remote}, &v)
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
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/edge-nodes/"+url.PathEscape(c.NodeID)+"/"+op, bytes.NewReader(body))
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/edge-nodes/"+url.PathEscape(c.NodeID)+"/blobs/"+digest, nil)
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
			return fmt.Errorf("feed: resuming %s at byte %d: %s, want 206", digest, offset, resp.Status)
		}
		body = resp.Body
		return nil
	})
	return body, err
}
