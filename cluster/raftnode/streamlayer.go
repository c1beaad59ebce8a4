package raftnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerauth"
)

const (
	// handshakeTimeout bounds how long an incoming connection may take to
	// send its TLS hello, prove the cluster key and say its kind. A peer
	// needs a round trip or two (milliseconds in a data centre), so a
	// second is ample, and a client that says nothing holds its slot no
	// longer than that.
	handshakeTimeout = time.Second
	// maxHandshakes bounds the handshakes in flight, so a crowd of silent
	// clients costs a bounded number of goroutines and buffers (a few KiB
	// each). It is well above what the per-address limit lets one address
	// hold: filling it takes 128 addresses, each opening 8 connections a
	// second.
	maxHandshakes = 1024
	// maxHandshakesPerAddr bounds the handshakes in flight from one source
	// address, so one client cannot take the slots the peers need. A
	// peer's own burst of dials over it is turned away and dials again
	// (see dial).
	maxHandshakesPerAddr = 8
)

// streamLayer is raft's network over mutually authenticated TLS: Accept
// hands raft only connections whose peer proved it holds the cluster key,
// so a stranger is dropped before raft reads a byte from it.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	tls       *tls.Config
	timeout   time.Duration // for a handshake
	log       *slog.Logger
	rawDial   func(ctx context.Context, addr string) (net.Conn, error)

	ready      chan net.Conn // authenticated raft connections, waiting for Accept
	rpc        chan net.Conn // authenticated peer RPC connections (see RPCListener)
	acceptErr  chan error    // listener errors, for raft's own backoff
	handshakes inFlight      // handshakes in progress, in all and per address
	refused    refusals      // connections turned away, for the log
	ctx        context.Context
	cancel     context.CancelFunc
	served     servedConns // incoming raft connections, drained at shutdown
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// listen starts a stream layer on bind. advertise, when not nil, is the
// address peers are told to dial; timeout bounds how long an incoming
// connection may take to prove the key.
func listen(bind string, advertise net.Addr, key peerauth.Key, timeout time.Duration, log *slog.Logger,
	dial func(ctx context.Context, addr string) (net.Conn, error)) (*streamLayer, error) {
	conf, err := key.TLSConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	// Peers cannot dial "any address": the same rule as raft's TCP transport.
	if a, ok := advertise.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("%s is not an address peers can dial: listen on a specific address or advertise one", advertise)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &streamLayer{
		ln: ln, advertise: advertise, tls: conf, timeout: timeout, log: log,
		ready: make(chan net.Conn), rpc: make(chan net.Conn), acceptErr: make(chan error),
		handshakes: inFlight{max: maxHandshakes, maxPerAddr: maxHandshakesPerAddr},
		ctx:        ctx, cancel: cancel, rawDial: dial,
	}
	if l.rawDial == nil {
		var d net.Dialer
		l.rawDial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	go l.serve()
	return l, nil
}

// serve accepts raw connections and authenticates each in its own
// goroutine. The loop itself never waits for a handshake or a slot: a
// connection over the limits is closed at once, so a crowd of silent
// clients cannot keep a peer's connection waiting in the listen queue.
func (l *streamLayer) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			// Raft's Accept loop backs off after an error before asking
			// again, which paces this loop too.
			select {
			case l.acceptErr <- err:
				continue
			case <-l.ctx.Done():
				return
			}
		}
		from := sourceAddr(c)
		if !l.handshakes.start(from) {
			// A reset, not a close: the socket keeps no state behind, and
			// the client knows at once (a peer dials again).
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			c.Close()
			l.refused.note(l.log, c.RemoteAddr(), errOverLimit)
			continue
		}
		go l.authenticate(c, from)
	}
}

// errOverLimit is the refusal of a connection over a handshake limit.
var errOverLimit = errors.New("too many handshakes in progress, from its address or in all")

func (l *streamLayer) authenticate(c net.Conn, from netip.Addr) {
	tc, kind, err := l.handshake(c)
	// The slot is free once the peer is known: delivering the connection
	// waits for raft (or the RPC server), not for the client.
	l.handshakes.done(from)
	if err != nil {
		c.Close()
		if l.ctx.Err() == nil {
			l.refused.note(l.log, c.RemoteAddr(), err)
		}
		return
	}
	to := l.ready
	if kind == muxRPC {
		to = l.rpc
	}
	select {
	case to <- tc:
	case <-l.ctx.Done():
		tc.Close()
	}
}

// handshake proves the cluster key and reads the connection's kind, all
// within the timeout: the client's hello, the handshake and the kind
// byte, so a client that sends them slowly gains no time either.
func (l *streamLayer) handshake(c net.Conn) (*tls.Conn, byte, error) {
	_ = c.SetDeadline(time.Now().Add(l.timeout))
	tc := tls.Server(c, l.tls)
	if err := tc.HandshakeContext(l.ctx); err != nil {
		return nil, 0, err
	}
	// The first byte says whose the connection is: raft's, or the
	// peers' RPC (one authenticated port for both).
	var kind [1]byte
	if _, err := io.ReadFull(tc, kind[:]); err != nil {
		return nil, 0, fmt.Errorf("reading the connection's kind: %w", err)
	}
	if kind[0] != muxRaft && kind[0] != muxRPC {
		return nil, 0, fmt.Errorf("unknown connection kind %q", kind[0])
	}
	_ = c.SetDeadline(time.Time{})
	return tc, kind[0], nil
}

// sourceAddr is the address a connection comes from, for the limit per
// address.
func sourceAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// inFlight counts the handshakes in progress, in all and per source
// address.
type inFlight struct {
	mu         sync.Mutex
	max        int // in all
	maxPerAddr int
	total      int
	perAddr    map[netip.Addr]int
}

// start takes a slot for a handshake from addr, if both limits allow.
func (f *inFlight) start(addr netip.Addr) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.total >= f.max || f.perAddr[addr] >= f.maxPerAddr {
		return false
	}
	if f.perAddr == nil {
		f.perAddr = map[netip.Addr]int{}
	}
	f.total++
	f.perAddr[addr]++
	return true
}

// done frees the slot start took.
func (f *inFlight) done(addr netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.perAddr[addr]--; f.perAddr[addr] == 0 {
		delete(f.perAddr, addr)
	}
}

// refusals logs the connections the port turned away, in one line a
// minute at most, with the counts since the line before: a misconfigured
// peer still shows within a minute, and a flood of strangers costs a
// counter each, not a line.
type refusals struct {
	mu        sync.Mutex
	next      time.Time // when the next line may be written
	failed    int       // handshakes that failed or timed out since the last line
	overLimit int       // connections over a handshake limit since then
}

const refusalLogEvery = time.Minute

func (r *refusals) note(log *slog.Logger, remote net.Addr, err error) {
	r.mu.Lock()
	if errors.Is(err, errOverLimit) {
		r.overLimit++
	} else {
		r.failed++
	}
	now := time.Now()
	if now.Before(r.next) {
		r.mu.Unlock()
		return
	}
	failed, overLimit := r.failed, r.overLimit
	r.failed, r.overLimit, r.next = 0, 0, now.Add(refusalLogEvery)
	r.mu.Unlock()
	// The counts are since the line before.
	log.Warn("raft: refused connections that did not prove the cluster key in time", "failed_handshakes", failed, "over_handshake_limits", overLimit, "last_remote", remote.String(), "last_err", err)
}

// The kinds of connection on the raft port, said in its first byte.
const (
	muxRaft byte = 'R'
	muxRPC  byte = 'P'
)

// Accept returns the next authenticated connection.
func (l *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return l.served.track(c), nil
	case err := <-l.acceptErr:
		return nil, err
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Dial connects to a peer and authenticates both ends within timeout.
func (l *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx := l.ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return l.dial(ctx, string(addr), muxRaft)
}

// dial connects to a peer, authenticates both ends and says the kind.
// A peer that hangs up before its part of the handshake turned the
// connection away (this node's burst of dials went over its limit per
// address, or strangers hold its slots for a moment): dial again shortly,
// within ctx.
func (l *streamLayer) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		c, err := l.dialOnce(ctx, addr, kind)
		if !errors.Is(err, errTurnedAway) {
			return c, err
		}
		select {
		case <-time.After(wait + rand.N(wait)): // spread, so a burst does not return as one
		case <-ctx.Done():
			return nil, err
		}
	}
}

// errTurnedAway is a handshake the peer ended without a word: no TLS
// alert, the connection closed or reset.
var errTurnedAway = errors.New("the peer closed the connection during the handshake")

func (l *streamLayer) dialOnce(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	raw, err := l.rawDial(ctx, addr)
	if err != nil {
		// Reset before the dial returned: turned away at once.
		if errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("%w: %w", errTurnedAway, err)
		}
		return nil, err
	}
	c := tls.Client(raw, l.tls)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			return nil, fmt.Errorf("%w: %w", errTurnedAway, err)
		}
		return nil, err
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// rpcListener hands out the peers' RPC connections until it is closed
// or the stream layer is.
type rpcListener struct {
	l      *streamLayer
	once   sync.Once
	closed chan struct{}
}

func (r *rpcListener) Accept() (net.Conn, error) {
	select {
	case c := <-r.l.rpc:
		return c, nil
	case <-r.closed:
		return nil, net.ErrClosed
	case <-r.l.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (r *rpcListener) Close() error {
	r.once.Do(func() { close(r.closed) })
	return nil
}

func (r *rpcListener) Addr() net.Addr { return r.l.advertise }

// Close stops accepting and aborts handshakes in flight. Connections
// already handed to raft are raft's to close.
func (l *streamLayer) Close() error {
	l.cancel()
	return l.ln.Close()
}

// Addr is the address peers dial.
func (l *streamLayer) Addr() net.Addr { return l.advertise }
