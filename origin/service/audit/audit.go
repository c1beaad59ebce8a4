// Package audit writes the audit log: one JSON line per login attempt and
// per write, saying who did what, when, from where, and how it ended.
package audit

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Event is one audit record.
type Event struct {
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`              // username, or "anonymous"
	ActorID string    `json:"actor_id,omitempty"` // user id
	Action  string    `json:"action"`             // e.g. auth.login, "PUT /api/v1/repositories/{id}"
	Target  string    `json:"target,omitempty"`   // the path or resource acted on
	Remote  string    `json:"remote"`             // client address
	// Via is the edge node the request came through: its Remote is the
	// node's word.
	Via       string `json:"via_edge,omitempty"`
	Outcome   string `json:"outcome"` // success | failure | denied
	Status    int    `json:"status,omitempty"`
	Reason    string `json:"reason,omitempty"` // why a credential check failed
	RequestID string `json:"request_id,omitempty"`
	// Node is the origin that wrote the line (its node id): in a cluster
	// every origin keeps its own audit log.
	Node string `json:"node"`
}

// Bounds on what an event echoes from a request: a 1 MB username must
// not become a 1 MB log line.
const (
	maxActor  = 128
	maxTarget = 1024
)

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Log appends events to a writer; a nil *Log discards them.
type Log struct {
	mu   sync.Mutex
	w    io.WriteCloser
	node string
	now  func() time.Time
}

// Open appends to the file at path, creating it (0600) and its directory;
// node names the origin in every line; now stamps events recorded
// without a time (nil: the wall clock).
func Open(path, node string, now func() time.Time) (*Log, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &Log{w: f, node: node, now: now}, nil
}

// Record writes one event as a JSON line.
func (l *Log) Record(e Event) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = l.now().UTC()
	}
	e.Node = l.node
	e.Actor, e.Target = clip(e.Actor, maxActor), clip(e.Target, maxTarget)
	e.Action, e.RequestID = clip(e.Action, maxTarget), clip(e.RequestID, maxActor)
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(b, '\n'))
}

// Close closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Close()
}
