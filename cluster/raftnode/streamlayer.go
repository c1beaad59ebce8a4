package raftnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/ratelimit"
)

const (
	// handshakeTimeout bounds how long an incoming connection may take to
	// prove the cluster key.
	handshakeTimeout = 5 * time.Second
	// maxHandshakes bounds the handshakes in flight, so a crowd of silent
	// clients costs a bounded number of goroutines and buffers.
	maxHandshakes = 64
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
	warned    *ratelimit.Limiter // refusals logged as warnings, the rest at debug
	rawDial   func(ctx context.Context, addr string) (net.Conn, error)

	ready     chan net.Conn // authenticated raft connections, waiting for Accept
	rpc       chan net.Conn // authenticated peer RPC connections (see RPCListener)
	acceptErr chan error    // listener errors, for raft's own backoff
	sem       chan struct{} // a slot per handshake in flight
	ctx       context.Context
	cancel    context.CancelFunc
	served    servedConns // incoming raft connections, drained at shutdown
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
		ln: ln, advertise: advertise, tls: conf, timeout: timeout, log: log, warned: ratelimit.New(10, time.Minute, nil),
		ready: make(chan net.Conn), rpc: make(chan net.Conn), acceptErr: make(chan error), sem: make(chan struct{}, maxHandshakes),
		ctx: ctx, cancel: cancel, rawDial: dial,
	}
	if l.rawDial == nil {
		var d net.Dialer
		l.rawDial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	go l.serve()
	return l, nil
}

// serve accepts raw connections and authenticates each in its own
// goroutine, so a slow or silent client holds one slot, not the loop.
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
		select {
		case l.sem <- struct{}{}:
		case <-l.ctx.Done():
			c.Close()
			return
		}
		go l.authenticate(c)
	}
}

func (l *streamLayer) authenticate(c net.Conn) {
	defer func() { <-l.sem }()
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	defer cancel()
	tc := tls.Server(c, l.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		if l.ctx.Err() == nil {
			// A misconfigured peer deserves a warning; a flood of strangers
			// must not become a flood of log lines.
			level := slog.LevelDebug
			if l.warned.Allow("").Allowed {
				level = slog.LevelWarn
			}
			l.log.Log(l.ctx, level, "raft: refused a connection that did not prove the cluster key", "remote", c.RemoteAddr().String(), "err", err)
		}
		return
	}
	// The first byte says whose the connection is: raft's, or the
	// peers' RPC (one authenticated port for both).
	var kind [1]byte
	_ = tc.SetReadDeadline(time.Now().Add(l.timeout))
	if _, err := io.ReadFull(tc, kind[:]); err != nil {
		tc.Close()
		return
	}
	_ = tc.SetReadDeadline(time.Time{})
	to := l.ready
	switch kind[0] {
	case muxRaft:
	case muxRPC:
		to = l.rpc
	default:
		tc.Close()
		return
	}
	select {
	case to <- tc:
	case <-l.ctx.Done():
		tc.Close()
	}
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
func (l *streamLayer) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	raw, err := l.rawDial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, l.tls)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
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
