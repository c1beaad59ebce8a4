package blobs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/fs"
)

// origins is a cluster's blob side in one process: each origin a disk
// store decorated by blobs.Store, its peers' RPC on an httptest server,
// the membership a list the test edits. Links to an origin marked down
// fail to connect, as to a dead peer.
type origins struct {
	t       *testing.T
	mu      sync.Mutex
	members []blobs.Member
	locals  []*fs.FS
	stores  []*blobs.Store
	servers []*httptest.Server
	down    []atomic.Bool
	stall   []atomic.Bool // its pushes hang until the pusher gives up
	hits    []hits
	clock   *blobtest.Clock
	refs    []string // what the referrer index lists; refs[i] was referenced at log index i+1
}

// hits counts the requests an origin's RPC served, by method.
type hits struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hits) add(method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[method]++
}

func (h *hits) get(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[method]
}

var errDown = errors.New("test: the origin is down")

// newOrigins starts n voting origins, the first one leading, under
// placement p.
func newOrigins(t *testing.T, n int, p blobs.Placement) *origins {
	t.Helper()
	c := &origins{t: t, down: make([]atomic.Bool, n), stall: make([]atomic.Bool, n), hits: make([]hits, n), clock: &blobtest.Clock{}}
	c.clock.Set(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	for i := range n {
		i := i
		c.hits[i].n = map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.down[i].Load() { // as a dead peer: the connection drops
				panic(http.ErrAbortHandler)
			}
			c.hits[i].add(r.Method)
			if r.Method == http.MethodPut && c.stall[i].Load() {
				// The whole body read, the server notices the pusher
				// hanging up.
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
				return
			}
			side := c.stores[i].Server()
			peerrpc.Handler(peerrpc.Services{Blobs: side, Uploads: side}).ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		c.servers = append(c.servers, srv)
		c.members = append(c.members, blobs.Member{ID: fmt.Sprintf("origin-%d", i), Addr: srv.Listener.Addr().String(), Voter: true, Leader: i == 0})
	}
	for i := range n {
		local, err := fs.New(t.TempDir(), fs.WithClock(c.clock.Now), fs.WithUploadIDPrefix(blobs.UploadIDPrefix(c.members[i].ID)))
		if err != nil {
			t.Fatal(err)
		}
		c.locals = append(c.locals, local)
		s := blobs.New(blobs.Config{Self: c.members[i].ID, Local: local, Members: blobs.MembersFunc(c.membership),
			Peers: peerrpc.NewClient(c.dial), Placement: p, MaxSize: 1 << 20, Referenced: c.referenced,
			ReferencedSince: c.referencedSince, Applied: c.applied, Grace: time.Hour, Now: c.clock.Now})
		c.stores = append(c.stores, s)
		t.Cleanup(s.Close) // before the directories go
	}
	return c
}

func (c *origins) membership() ([]blobs.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]blobs.Member(nil), c.members...), nil
}

// setMembers changes the membership all origins see.
func (c *origins) setMembers(fn func(ms []blobs.Member) []blobs.Member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = fn(c.members)
}

// lead makes origin i the leader.
func (c *origins) lead(i int) {
	c.setMembers(func(ms []blobs.Member) []blobs.Member {
		for j := range ms {
			ms[j].Leader = j == i
		}
		return ms
	})
}

func (c *origins) dial(ctx context.Context, addr string) (net.Conn, error) {
	ms, _ := c.membership()
	for i, m := range ms {
		if m.Addr == addr && i < len(c.down) && c.down[i].Load() {
			return nil, errDown
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (c *origins) referenced(after string, limit int) ([]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var page []string
	for _, d := range c.refs {
		if d > after {
			page = append(page, d)
		}
	}
	if len(page) > limit {
		return page[:limit], page[limit-1], nil
	}
	return page, "", nil
}

// referencedSince lists the refs after log index after.
func (c *origins) referencedSince(after uint64, limit int) ([]string, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := min(int(after), len(c.refs))
	to := min(from+limit, len(c.refs))
	return append([]string(nil), c.refs[from:to]...), uint64(to), nil
}

func (c *origins) applied() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return uint64(len(c.refs))
}

// has reports whether origin i holds digest itself.
func (c *origins) has(i int, digest string) bool {
	_, err := c.locals[i].Stat(context.Background(), digest)
	return err == nil
}

// holding are the origins that hold digest.
func (c *origins) holding(digest string) []int {
	var out []int
	for i := range c.locals {
		if c.has(i, digest) {
			out = append(out, i)
		}
	}
	return out
}

// waitHolding waits (5 s at most) until exactly the origins want hold
// digest.
func (c *origins) waitHolding(digest string, want ...int) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := c.holding(digest)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s is on origins %v, want %v", digest, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holders are the indexes of the origins placement p names for digest.
func (c *origins) holders(p blobs.Placement, digest string) []int {
	ms, _ := c.membership()
	var out []int
	for _, h := range p.Holders(digest, ms) {
		for i, m := range ms {
			if m.ID == h.ID {
				out = append(out, i)
			}
		}
	}
	return out
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func randomBlob(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, 4<<10)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// blobPlaced is a random blob whose holders under p are exactly want.
func (c *origins) blobPlaced(p blobs.Placement, want ...int) []byte {
	c.t.Helper()
	for range 10000 {
		b := randomBlob(c.t)
		if fmt.Sprint(c.holders(p, digestOf(b))) == fmt.Sprint(want) {
			return b
		}
	}
	c.t.Fatalf("no blob placed on %v", want)
	return nil
}

// put stores b at origin i through its decorated store.
func (c *origins) put(i int, b []byte) (blob.Info, error) {
	return c.stores[i].Put(c.t.Context(), bytes.NewReader(b), blob.PutOptions{})
}

// putHere stores b on origin i's disk alone, as if replication had not
// reached the others.
func (c *origins) putHere(i int, b []byte) {
	c.t.Helper()
	if _, err := c.locals[i].Put(c.t.Context(), bytes.NewReader(b), blob.PutOptions{}); err != nil {
		c.t.Fatal(err)
	}
}
