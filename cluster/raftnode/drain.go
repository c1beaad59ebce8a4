package raftnode

import (
	"net"
	"sync"
	"time"
)

// Raft's transport serves each incoming connection on a goroutine of its
// own that nothing waits for: closing the transport stops new
// connections, while a command already read (a heartbeat, which raft
// handles on that goroutine) may still be writing the term to the log
// store. Shutdown therefore closes the incoming connections and waits
// until each handler has left its command (see served) before the store
// closes; a heartbeat that lands on a closed store makes raft panic.

// served is an incoming raft connection whose handler shutdown waits for.
type served struct {
	net.Conn
	mu      sync.Mutex
	closing bool          // shutdown closed it
	idle    chan struct{} // closed once its handler holds no command
	once    sync.Once
}

func (c *served) markIdle() { c.once.Do(func() { close(c.idle) }) }

// Read after shutdown began means the handler is between commands (the
// ones it had buffered are done): it will stop at this error.
func (c *served) Read(p []byte) (int, error) {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		c.markIdle()
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.closing {
			c.markIdle()
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close is the handler's (its deferred close): it is done.
func (c *served) Close() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	err := c.Conn.Close()
	c.markIdle()
	return err
}

// stop is shutdown's close: it unblocks the handler, which may still be
// in a command.
func (c *served) stop() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	_ = c.Conn.Close()
}

// servedConns tracks the incoming raft connections.
type servedConns struct {
	mu    sync.Mutex
	conns map[*served]bool
}

func (s *servedConns) track(c net.Conn) net.Conn {
	w := &served{Conn: c, idle: make(chan struct{})}
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[*served]bool{}
	}
	s.conns[w] = true
	s.mu.Unlock()
	go func() { <-w.idle; s.mu.Lock(); delete(s.conns, w); s.mu.Unlock() }()
	return w
}

// drain closes every tracked connection and waits, at most wait, until
// their handlers hold no command.
func (s *servedConns) drain(wait time.Duration) {
	s.mu.Lock()
	var all []*served
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
	deadline := time.After(wait)
	for _, c := range all {
		select {
		case <-c.idle:
		case <-deadline:
			return
		}
	}
}
