package leader

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Forwarding applies commands wherever the write arrived: on the leader
// it commits them itself; on a follower it sends the command, decided
// there with its preconditions, to the leader in one hop (the peers' RPC
// on the raft port), and then waits until this node has applied the
// entry, so what its caller reads next includes the write. While there is
// no leader (an election) it waits, at most Wait.
type Forwarding struct {
	Node  *raftnode.Node
	Store interface {
		WaitIndex(ctx context.Context, i uint64) error
	}
	// Wait bounds the wait for a leader: an election's worth.
	Wait time.Duration
	http *http.Client
}

var _ Applier = (*Forwarding)(nil)

// ApplyPath is the leader's RPC route that commits a command.
const ApplyPath = "/v1/apply"

// ErrUnknownOutcome means a command went to the leader and the answer
// did not come back: it may or may not have been committed. The caller
// reports it; retrying is the client's to decide.
var ErrUnknownOutcome = meta.ErrUnknownOutcome

// maxCommand bounds a forwarded command (raft entries are small: they
// carry digests and metadata, never bytes).
const maxCommand = 64 << 20

type applyAnswer struct {
	Index uint64          `json:"index"`
	Err   *meta.WireError `json:"error,omitempty"`
}

// NewForwarding makes a Forwarding over node; store is this node's,
// peers calls the peers' RPC (PeerClient).
func NewForwarding(node *raftnode.Node, store interface {
	WaitIndex(ctx context.Context, i uint64) error
}, wait time.Duration, peers *http.Client) *Forwarding {
	return &Forwarding{Node: node, Store: store, Wait: wait, http: peers}
}

// PeerClient is an HTTP client whose requests to http://<raft address>/…
// travel over the peers' authenticated RPC connections.
func PeerClient(node *raftnode.Node) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			c, err := node.DialRPC(ctx, addr)
			if err != nil {
				return nil, &dialError{err}
			}
			return c, nil
		},
		MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute,
	}}
}

// Apply commits c through the leader. A command some voter cannot apply
// yet is refused here already (Gate), whichever node leads.
func (f *Forwarding) Apply(ctx context.Context, c meta.Command) (uint64, error) {
	data, err := meta.Encode(c)
	if err != nil {
		return 0, err
	}
	if err := f.Node.Check(data); err != nil {
		return 0, err
	}
	wait := f.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		if f.Node.IsLeader() {
			idx, resp, err := f.Node.Apply(ctx, data)
			if err == nil {
				if e, ok := resp.(error); ok {
					return idx, e
				}
				return idx, nil
			}
			if errors.Is(err, raft.ErrLeadershipLost) {
				return 0, ErrUnknownOutcome
			}
			if !errors.Is(err, raftnode.ErrNotLeader) {
				return 0, err
			}
		} else if _, addr := f.Node.Leader(); addr != "" {
			idx, werr, err := f.forward(ctx, addr, data)
			if err == nil {
				if err := f.Store.WaitIndex(ctx, idx); err != nil {
					return idx, err
				}
				return idx, werr.Err()
			}
			if !errors.Is(err, errRetry) {
				return 0, err
			}
		}
		if time.Now().After(deadline) {
			return 0, ErrNoLeader
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// IndexPath is the leader's RPC route that answers its commit index.
const IndexPath = "/v1/index"

// Sync waits until this node has applied everything the leader had
// applied when Sync was called, so a decision taken here next sees
// every write acknowledged before, on whichever origin (one hop; nothing
// to do on the leader, which applies what it acknowledges first). While
// there is no leader it waits, at most Wait.
func (f *Forwarding) Sync(ctx context.Context) error {
	deadline := time.Now().Add(cmp.Or(f.Wait, 10*time.Second))
	for {
		if f.Node.IsLeader() {
			return nil
		}
		if _, addr := f.Node.Leader(); addr != "" {
			idx, err := f.commitIndex(ctx, addr)
			if err == nil {
				return f.Store.WaitIndex(ctx, idx)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if time.Now().After(deadline) {
			return ErrNoLeader
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (f *Forwarding) commitIndex(ctx context.Context, addr string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(f.Wait, 10*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+IndexPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", addr, resp.Status)
	}
	var a applyAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1024)).Decode(&a); err != nil {
		return 0, err
	}
	return a.Index, nil
}

// IndexHandler is the leader's side of Sync: the last index its state
// machine applied (applied), which covers every write acknowledged
// anywhere: the leader applies each before it is acknowledged. Not raft's
// commit index: that counts raft's own entries (the no-op a new leader
// commits), which a store never applies. A node that is not the leader
// answers 421.
func IndexHandler(node *raftnode.Node, applied func() uint64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !node.IsLeader() {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(applyAnswer{Index: applied()})
	})
}

// dialError is a connection to a peer that could not be made: nothing
// was sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// errRetry: the command did not reach a leader (no connection, or the
// node asked is not the leader any more): it may be sent again.
var errRetry = errors.New("not delivered to a leader")

func (f *Forwarding) forward(ctx context.Context, addr string, data []byte) (uint64, *meta.WireError, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+ApplyPath, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	resp, err := f.http.Do(req)
	var de *dialError
	switch {
	case errors.As(err, &de):
		return 0, nil, fmt.Errorf("%w: %w", errRetry, err) // nothing was sent
	case err != nil && ctx.Err() != nil:
		return 0, nil, ctx.Err()
	case err != nil:
		return 0, nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusMisdirectedRequest:
		return 0, nil, errRetry // not the leader (any more): it took nothing
	case http.StatusServiceUnavailable:
		return 0, nil, ErrUnknownOutcome // it lost the leadership with the entry in flight
	}
	var a applyAnswer
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, nil, fmt.Errorf("the leader refused the command: %s: %s", resp.Status, msg)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
	return a.Index, a.Err, nil
}

// ApplyHandler is the leader's side of Forwarding: it commits a command a
// peer decided (only a command this build knows: an unknown one would
// stop every node's state machine) and answers its index and refusal. A
// node that is not the leader answers 421, and the peer asks again.
func ApplyHandler(node *raftnode.Node) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCommand))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		answer := func(a applyAnswer) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(a)
		}
		if _, err := meta.Decode(data); errors.Is(err, meta.ErrUnknownCommand) {
			// A newer follower's command: this leader's build cannot apply it.
			answer(applyAnswer{Err: meta.ToWire(fmt.Errorf("%w (the leader cannot apply it: %v)", meta.ErrUpgrading, err))})
			return
		} else if err != nil {
			http.Error(w, "not a command: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !node.IsLeader() {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		idx, resp, err := node.Apply(r.Context(), data)
		if errors.Is(err, raftnode.ErrNotLeader) {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		if errors.Is(err, meta.ErrUpgrading) {
			answer(applyAnswer{Err: meta.ToWire(err)})
			return
		}
		if err != nil { // the leadership was lost with the entry in flight, say
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		a := applyAnswer{Index: idx}
		if e, ok := resp.(error); ok {
			a.Err = meta.ToWire(e)
		}
		answer(a)
	})
}

// RemovePath is the leader's RPC route that takes a peer out of the raft
// configuration.
const RemovePath = "/v1/remove-peer"

// RemovePeer takes node id out of the raft configuration: on the leader
// directly, elsewhere by asking the leader.
func (f *Forwarding) RemovePeer(ctx context.Context, id string) error {
	if f.Node.IsLeader() {
		return f.Node.RemoveServer(id, 10*time.Second)
	}
	_, addr := f.Node.Leader()
	if addr == "" {
		return ErrNoLeader
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+RemovePath, bytes.NewReader([]byte(id)))
	if err != nil {
		return err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return fmt.Errorf("asking the leader to remove %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("the leader did not remove %s: %s: %s", id, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// RemoveHandler is the leader's side of RemovePeer.
func RemoveHandler(node *raftnode.Node) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 256))
		if err != nil || r.Method != http.MethodPost || len(id) == 0 {
			http.Error(w, "POST a node id", http.StatusBadRequest)
			return
		}
		if err := node.RemoveServer(string(id), 10*time.Second); err != nil {
			status := http.StatusServiceUnavailable
			if errors.Is(err, raftnode.ErrNotLeader) {
				status = http.StatusMisdirectedRequest
			}
			http.Error(w, err.Error(), status)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
