//go:build linux

package raftnode

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
)

// Helpers for floods of strangers on the raft port. Linux only: the
// strangers come from loopback addresses other than 127.0.0.1 (all of
// 127.0.0.0/8 is the loopback there), so that the peer, from 127.0.0.1,
// is another address.

// raiseFDLimit makes room for n open files, or skips the test.
func raiseFDLimit(tb testing.TB, n uint64) {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Skipf("cannot read the open files limit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		tb.Skipf("needs %d open files; the hard limit (ulimit -Hn) is %d", n, lim.Max)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Skipf("needs %d open files; cannot raise the limit: %v", n, err)
	}
}

// stranger is the i-th loopback address a flood comes from (127.0.1.0 +
// i; never 127.0.0.1, the peers').
func stranger(i int) net.IP { return net.IPv4(127, 0, byte(1+i/256), byte(i%256)) }

// needStrangerAddrs skips the test when this host cannot dial from the
// strangers' addresses.
func needStrangerAddrs(tb testing.TB) {
	tb.Helper()
	c, err := dialFrom(stranger(0), "127.0.0.1:1")
	if err == nil {
		c.Close()
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		tb.Skipf("cannot dial from %s (a loopback address other than 127.0.0.1): %v", stranger(0), err)
	}
}

// dialFrom opens a TCP connection to addr from the local address ip.
func dialFrom(ip net.IP, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}
	return d.Dial("tcp", addr)
}

// flood opens idle connections to addr (a TCP connection that never
// says a word) from sources addresses in turn, and garbage ones (random
// bytes instead of a TLS hello) from as many others, garbage first. It
// returns the connections open, and how many dials the listener reset
// before they returned (turned away at once).
func flood(tb testing.TB, addr string, sources, idle, garbage int) (conns []net.Conn, reset int) {
	tb.Helper()
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	open := func(from net.IP) net.Conn {
		c, err := dialFrom(from, addr)
		if errors.Is(err, syscall.ECONNRESET) {
			reset++
			return nil
		}
		if err != nil {
			tb.Fatalf("flood: %v", err)
		}
		conns = append(conns, c)
		return c
	}
	for i := range garbage {
		if c := open(stranger(sources + i%sources)); c != nil {
			p := make([]byte, 1+mrand.IntN(2000))
			rand.Read(p)
			c.Write(p)
		}
	}
	for i := range idle {
		open(stranger(i % sources))
	}
	return conns, reset
}

// echoRPC serves l's peer RPC connections by echoing what they send.
func echoRPC(l *streamLayer) {
	ln := &rpcListener{l: l, closed: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
}

// peerRPC connects from peer to addr as the peers' RPC does and has a
// byte echoed: the time a write forwarded through a follower waits for
// its connection.
func peerRPC(peer *streamLayer, addr string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c, err := peer.dial(ctx, addr, muxRPC)
	if err != nil {
		return time.Since(start), err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte{42}); err != nil {
		return time.Since(start), err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return time.Since(start), err
	}
	return time.Since(start), nil
}

// BenchmarkPeerConnectUnderFlood: the time a peer with the key takes to
// connect to the raft port and have an RPC answered while 1,000 idle
// connections (and 300 garbage ones before them) were just opened to it,
// from one stranger address or from 125. Each iteration is a fresh
// listener and a fresh flood; the peer waits up to two minutes.
//
//	go test -run '^$' -bench PeerConnectUnderFlood -benchtime 5x ./cluster/raftnode/
func BenchmarkPeerConnectUnderFlood(b *testing.B) {
	raiseFDLimit(b, 4096)
	needStrangerAddrs(b)
	key := peerauth.NewKey()
	for _, sources := range []int{1, 125} {
		b.Run(fmt.Sprintf("sources=%d", sources), func(b *testing.B) {
			var worst time.Duration
			for range b.N {
				b.StopTimer()
				l, err := listen("127.0.0.1:0", nil, key, handshakeTimeout, quiet, nil)
				if err != nil {
					b.Fatal(err)
				}
				echoRPC(l)
				peer, err := listen("127.0.0.1:0", nil, key, handshakeTimeout, quiet, nil)
				if err != nil {
					b.Fatal(err)
				}
				conns, _ := flood(b, l.Addr().String(), sources, 1000, 300)
				b.StartTimer()
				took, err := peerRPC(peer, l.Addr().String(), 2*time.Minute)
				b.StopTimer()
				if err != nil {
					b.Fatalf("peer after %s: %v", took, err)
				}
				worst = max(worst, took)
				for _, c := range conns {
					c.Close()
				}
				l.Close()
				peer.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(worst)/float64(time.Millisecond), "max-ms")
		})
	}
}
