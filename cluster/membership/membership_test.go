package membership

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
)

func start(t *testing.T, id string, key peerauth.Key, meta Meta) *Pool {
	t.Helper()
	p, err := Start(Config{NodeID: id, BindAddr: "127.0.0.1:0", Key: key, Meta: meta, Fast: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func statusOf(p *Pool, id string) string {
	for _, m := range p.Members() {
		if m.ID == id {
			return m.Status
		}
	}
	return ""
}

// TestPool: nodes that hold the cluster key join one pool and see each
// other's meta; a node that leaves is "left", one that stops without a
// word is found "dead"; a node with another key cannot join.
func TestPool(t *testing.T) {
	key := peerauth.NewKey()
	a := start(t, "a", key, Meta{Role: RoleOrigin, RaftAddr: "127.0.0.1:1", APIURL: "http://a"})
	b := start(t, "b", key, Meta{Role: RoleOrigin, RaftAddr: "127.0.0.1:2", APIURL: "http://b"})
	c := start(t, "c", key, Meta{Role: RoleEdge, APIURL: "http://c"})
	for _, p := range []*Pool{b, c} {
		if err := p.Join([]string{a.Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three alive members everywhere", func() bool {
		for _, p := range []*Pool{a, b, c} {
			ms := p.Members()
			if len(ms) != 3 || ms[0].Status != Alive || ms[1].Status != Alive || ms[2].Status != Alive {
				return false
			}
		}
		return true
	})
	if ms := c.Members(); ms[1].ID != "b" || ms[1].RaftAddr != "127.0.0.1:2" || ms[1].Role != RoleOrigin || ms[2].Role != RoleEdge {
		t.Fatalf("members seen from c: %+v", ms)
	}
	a.Update(func(m *Meta) { m.Applied = 42 })
	waitFor(t, "the applied index to spread", func() bool { return b.Members()[0].Applied == 42 })

	stranger := start(t, "x", peerauth.NewKey(), Meta{Role: RoleOrigin})
	_ = stranger.Join([]string{a.Addr()}) // refused: it cannot decrypt, nor be decrypted
	time.Sleep(500 * time.Millisecond)    // several gossip rounds
	if statusOf(a, "x") != "" || len(stranger.Members()) != 1 {
		t.Fatal("a node with another key joined the pool")
	}

	if err := c.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c to be seen as left", func() bool { return statusOf(a, "c") == Left })
	_ = b.Shutdown()
	waitFor(t, "b to be found dead", func() bool { return statusOf(a, "b") == Dead })
}

// TestHostNameAddress: a gossip address may name the host (a container's
// own name): the pool binds and advertises its address.
func TestHostNameAddress(t *testing.T) {
	p, err := Start(Config{NodeID: "named", BindAddr: "localhost:0", Key: peerauth.NewKey(), Fast: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	if addr := p.Addr(); !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("advertised %q", addr)
	}
	if _, _, err := splitHostPort("no-such-host.invalid:8301"); err == nil {
		t.Fatal("an unknown host name was accepted")
	}
}
