//go:build linux

package raftnode

import (
	"errors"
	"github.com/depot-registry/depot/shared/syncbuf"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/logx"
)

// closedWithin reports whether the listener ended c (EOF or a reset)
// within d; false when c is still open after d. What the listener sent
// first (a TLS alert, for garbage) is read past.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

// TestFloodDoesNotBlockPeers: 300 connections sending garbage, then
// 1,000 that say nothing, from one address or spread over 125: a peer
// with the key connects and has an RPC answered in under a second,
// five times over, while they are open; the accept loop deals with every
// one of them (turned away at once, or dropped at the handshake timeout)
// and the log has one line about them.
func TestFloodDoesNotBlockPeers(t *testing.T) {
	raiseFDLimit(t, 4096)
	needStrangerAddrs(t)
	for _, tc := range []struct {
		name    string
		sources int
	}{{"one address", 1}, {"125 addresses", 125}} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncbuf.Buffer
			key := peerauth.NewKey()
			l, err := listen("127.0.0.1:0", nil, key, handshakeTimeout, logx.New(&log, "text", "info"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			echoRPC(l)
			peer := listenT(t, key, handshakeTimeout)
			addr := l.Addr().String()

			start := time.Now()
			conns, reset := flood(t, addr, tc.sources, 1000, 300)
			opened := time.Since(start)
			inFlight := l.handshakes.count()
			var worst time.Duration
			for range 5 {
				took, err := peerRPC(peer, addr, 10*time.Second)
				if err != nil {
					t.Fatalf("the peer's RPC after %s: %v", took, err)
				}
				worst = max(worst, took)
			}
			t.Logf("flood opened in %s (%d connections open, %d reset as they were dialled); %d handshakes in flight; the peer's connect and RPC took at most %s",
				opened, len(conns), reset, inFlight, worst)
			if worst > time.Second {
				t.Errorf("the peer waited %s", worst)
			}
			if tc.sources > 1 && inFlight < 900 {
				t.Errorf("only %d handshakes in flight as the peer connected: the flood was not there", inFlight)
			}

			// Every flood connection is dealt with: turned away at once, or
			// dropped when its second is up. None waits in the listen queue.
			// (Timed from now: opening the flood takes a while itself.)
			checked := time.Now()
			closedAt := make(chan time.Duration, len(conns))
			for _, c := range conns {
				go func() {
					if closedWithin(c, handshakeTimeout+2*time.Second) {
						closedAt <- time.Since(checked)
					} else {
						closedAt <- -1
					}
				}()
			}
			atOnce, last := reset, time.Duration(0)
			for range conns {
				d := <-closedAt
				if d < 0 {
					t.Fatalf("a flood connection was still open %s after the flood began", handshakeTimeout+2*time.Second)
				}
				if d < 200*time.Millisecond {
					atOnce++
				}
				last = max(last, d)
			}
			t.Logf("%d of 1,300 closed at once (reset as dialled, or within 200ms of the flood's end); all closed %s after the flood's end", atOnce, last)
			if tc.sources == 1 && atOnce < 1000-maxHandshakesPerAddr {
				t.Errorf("from one address, only %d connections were closed at once", atOnce)
			}

			// One line for the lot (a minute's worth), counting them.
			if n := strings.Count(log.String(), "refused connections"); n != 1 {
				t.Errorf("%d log lines about the flood, want 1:\n%s", n, log.String())
			}
			if l.handshakes.count() != 0 {
				t.Errorf("%d handshake slots still taken", l.handshakes.count())
			}
		})
	}
}

// TestHandshakeLimits: one address holds at most maxHandshakesPerAddr
// handshakes, the next are closed at once, and other addresses are not
// affected; over the global limit a connection is closed at once too,
// and a peer turned away dials again until a slot frees.
func TestHandshakeLimits(t *testing.T) {
	needStrangerAddrs(t)
	key := peerauth.NewKey()
	l := listenT(t, key, time.Hour) // only the limits close connections here
	echoRPC(l)
	addr := l.Addr().String()
	dial := func(from net.IP) net.Conn {
		t.Helper()
		c, err := dialFrom(from, addr)
		if errors.Is(err, syscall.ECONNRESET) {
			return nil // reset before the dial returned
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var held []net.Conn
	for range maxHandshakesPerAddr {
		held = append(held, dial(stranger(0)))
	}
	waitSlots := func(n int) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); l.handshakes.count() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d handshakes in flight, want %d", l.handshakes.count(), n)
			}
		}
	}
	waitSlots(maxHandshakesPerAddr)
	for i := range 20 {
		start := time.Now()
		if c := dial(stranger(0)); c != nil && !closedWithin(c, time.Second) {
			t.Fatalf("connection %d over the limit of its address was kept", maxHandshakesPerAddr+i+1)
		}
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Fatalf("connection %d over the limit of its address took %s to close", maxHandshakesPerAddr+i+1, d)
		}
	}
	for _, c := range held {
		if closedWithin(c, 10*time.Millisecond) {
			t.Fatal("a connection within the limit was closed")
		}
	}
	other := dial(stranger(1))
	if closedWithin(other, 100*time.Millisecond) {
		t.Fatal("another address's connection was closed")
	}
	if took, err := peerRPC(listenT(t, key, handshakeTimeout), addr, 5*time.Second); err != nil || took > 500*time.Millisecond {
		t.Fatalf("the peer, beside the capped address: %s, %v", took, err)
	}
	// The address's slots free as its connections end.
	held[0].Close()
	waitSlots(maxHandshakesPerAddr)
	if c := dial(stranger(0)); c == nil || closedWithin(c, 100*time.Millisecond) {
		t.Fatal("a freed slot was not given to the address's next connection")
	}

	// The global limit: 9 slots taken of 12, so 3 more from a third
	// address are held and the next is closed at once.
	l.handshakes.mu.Lock()
	l.handshakes.max = maxHandshakesPerAddr + 4
	l.handshakes.mu.Unlock()
	for range 3 {
		if c := dial(stranger(2)); c == nil || closedWithin(c, 100*time.Millisecond) {
			t.Fatal("a connection within the global limit was closed")
		}
	}
	waitSlots(maxHandshakesPerAddr + 4)
	start := time.Now()
	if c := dial(stranger(3)); c != nil && !closedWithin(c, time.Second) {
		t.Fatal("a connection over the global limit was kept")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("a connection over the global limit took %s to close", d)
	}
	// A peer turned away dials again, and gets the slot an idle
	// connection leaves.
	go func() { time.Sleep(300 * time.Millisecond); other.Close() }()
	if took, err := peerRPC(listenT(t, key, handshakeTimeout), addr, 5*time.Second); err != nil {
		t.Fatalf("the peer, with every slot taken for 300ms: %s, %v", took, err)
	} else if took < 300*time.Millisecond {
		t.Fatalf("the peer got in after %s, before a slot was free", took)
	}
}
