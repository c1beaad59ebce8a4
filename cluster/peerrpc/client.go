package peerrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Client calls the peers' RPC; addr in every method is the peer's raft
// address.
type Client struct{ http *http.Client }

// NewClient makes a client whose connections dial opens (raftnode's
// DialRPC: authenticated with the cluster key).
func NewClient(dial func(ctx context.Context, addr string) (net.Conn, error)) *Client {
	return &Client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			c, err := dial(ctx, addr)
			if err != nil {
				return nil, &dialError{err}
			}
			return c, nil
		},
		MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute,
	}}}
}

// dialError is a connection that could not be made: nothing was sent.
type dialError struct{ err error }

func (e *dialError) Error() string        { return e.err.Error() }
func (e *dialError) Unwrap() error        { return e.err }
func (e *dialError) Is(target error) bool { return target == ErrNotSent }

func target(addr, path string) string { return "http://" + addr + path }

// readMessage is the start of a refusal's body, for the error that
// reports it.
func readMessage(r io.Reader, n int64) string {
	msg, _ := io.ReadAll(io.LimitReader(r, n))
	return strings.TrimSpace(string(msg))
}

// Apply asks the leader at addr to commit cmd. Besides the answer, it
// returns ErrNotSent or ErrNotLeader when the leader certainly took
// nothing (the command may be sent again), meta.ErrUnknownOutcome when
// the answer was lost (it may have been committed), ctx's error, or the
// leader's refusal of the request.
func (c *Client) Apply(ctx context.Context, addr string, cmd []byte) (ApplyAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target(addr, ApplyPath), bytes.NewReader(cmd))
	if err != nil {
		return ApplyAnswer{}, err
	}
	resp, err := c.http.Do(req)
	switch {
	case errors.Is(err, ErrNotSent):
		return ApplyAnswer{}, err
	case err != nil && ctx.Err() != nil:
		return ApplyAnswer{}, ctx.Err()
	case err != nil:
		return ApplyAnswer{}, fmt.Errorf("%w: %w", meta.ErrUnknownOutcome, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusMisdirectedRequest:
		return ApplyAnswer{}, ErrNotLeader
	case http.StatusServiceUnavailable:
		return ApplyAnswer{}, meta.ErrUnknownOutcome
	default:
		return ApplyAnswer{}, fmt.Errorf("the leader refused the command: %s: %s", resp.Status, readMessage(resp.Body, 1024))
	}
	var a ApplyAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return ApplyAnswer{}, fmt.Errorf("%w: %w", meta.ErrUnknownOutcome, err)
	}
	return a, nil
}

// Index asks the leader at addr for the last index its store applied.
func (c *Client) Index(ctx context.Context, addr string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target(addr, IndexPath), nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", addr, resp.Status)
	}
	var a IndexAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1024)).Decode(&a); err != nil {
		return 0, err
	}
	return a.Index, nil
}

// RemovePeer asks the leader at addr to take node id out of the raft
// configuration.
func (c *Client) RemovePeer(ctx context.Context, addr, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target(addr, RemovePeerPath), strings.NewReader(id))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("asking the leader to remove %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("the leader did not remove %s: %s: %s", id, resp.Status, readMessage(resp.Body, 1024))
	}
	return nil
}

// HasBlob reports whether the origin at addr holds digest itself; a
// failure to ask is false.
func (c *Client) HasBlob(ctx context.Context, addr, digest string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, target(addr, BlobsPath+digest), nil)
	if err != nil {
		return false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// GetBlob streams digest from the origin at addr, which does not ask
// further. The bytes are the peer's: check them against the digest.
func (c *Client) GetBlob(ctx context.Context, addr, digest string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target(addr, BlobsPath+digest), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", addr, resp.Status)
	}
	return resp.Body, nil
}

// PushBlob sends the size bytes of body to the origin at addr as blob
// digest; nil when it stored them or had them already.
func (c *Client) PushBlob(ctx context.Context, addr, digest string, body io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target(addr, BlobsPath+digest), body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s: %s: %s", addr, resp.Status, readMessage(resp.Body, 512))
	}
	return nil
}

// Upload reads upload id's state on the origin at addr that holds it.
func (c *Client) Upload(ctx context.Context, addr, id string) (UploadState, error) {
	var st UploadState
	return st, c.upload(ctx, http.MethodGet, addr, id, nil, nil, &st)
}

// AppendUpload appends body to upload id on the origin at addr; the
// answer is the upload after it.
func (c *Client) AppendUpload(ctx context.Context, addr, id string, a AppendRequest, body io.Reader) (UploadState, error) {
	q := url.Values{"offset": {strconv.FormatInt(a.Offset, 10)}, "max": {strconv.FormatInt(a.Max, 10)}}
	var st UploadState
	return st, c.upload(ctx, http.MethodPatch, addr, id, q, body, &st)
}

// CommitUpload commits upload id on the origin at addr.
func (c *Client) CommitUpload(ctx context.Context, addr, id string, cr CommitRequest) (BlobInfo, error) {
	body, err := json.Marshal(cr.Expect)
	if err != nil {
		return BlobInfo{}, err
	}
	q := url.Values{"offset": {strconv.FormatInt(cr.Offset, 10)}}
	var info BlobInfo
	return info, c.upload(ctx, http.MethodPost, addr, id, q, bytes.NewReader(body), &info)
}

// CancelUpload cancels upload id on the origin at addr.
func (c *Client) CancelUpload(ctx context.Context, addr, id string) error {
	return c.upload(ctx, http.MethodDelete, addr, id, nil, nil, nil)
}

// upload makes one request on UploadsPath and decodes its JSON answer
// into out; the owner's refusals come back as the store's errors.
func (c *Client) upload(ctx context.Context, method, addr, id string, q url.Values, body io.Reader, out any) error {
	u := target(addr, UploadsPath+id)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Err != nil {
			return ue.Err // a body that failed to read says why (a chunk of the wrong size)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return uploadErr(resp.StatusCode, readMessage(resp.Body, 512))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out)
}

// uploadErr is the error an upload's refusal with status says.
func uploadErr(status int, msg string) error {
	for _, r := range uploadRefusals {
		if r.status == status {
			return fmt.Errorf("%w (on its origin: %s)", r.err, msg)
		}
	}
	if status == http.StatusConflict {
		return ErrUploadChanged
	}
	return fmt.Errorf("the upload's origin answered %d: %s", status, msg)
}
