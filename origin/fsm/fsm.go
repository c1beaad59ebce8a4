// Package fsm is the raft.FSM of the origin: it hands committed log entries
// to the metadata store in batches and streams the store for snapshots.
package fsm

import (
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/shared/meta"
)

// FSM applies Raft log entries to a meta.Store.
type FSM struct {
	store *meta.Store
	// Unapplicable is told of a log entry this build cannot apply (a
	// command only a newer Depot knows: meta.ErrUnknownCommand) and must
	// not return: skipping the entry would fork this replica from the
	// others. The origin reports it and exits. Nil: panic.
	Unapplicable func(index uint64, err error)
	// Snapshotted, when set, is told how long writing a snapshot took.
	Snapshotted func(d time.Duration)
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns an FSM over store.
func New(store *meta.Store) *FSM { return &FSM{store: store} }

// Apply applies one entry; the response is the command's error or nil.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies a batch of entries in one store transaction. Only
// command entries reach the store; raft's own entry types answer nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	entries := make([]meta.Entry, 0, len(logs))
	pos := make([]int, 0, len(logs))
	applied := f.store.LastApplied()
	for i, l := range logs {
		if l.Type != raft.LogCommand || l.Index <= applied {
			continue // raft's own entries; entries the store has (a log replayed at start)
		}
		if err := meta.Applicable(l.Data); err != nil {
			if f.Unapplicable != nil {
				f.Unapplicable(l.Index, err)
			}
			panic(fmt.Sprintf("fsm: log entry %d: %v", l.Index, err))
		}
		entries = append(entries, meta.Entry{Index: l.Index, Data: l.Data})
		pos = append(pos, i)
	}
	if len(entries) == 0 {
		return out
	}
	for j, r := range f.store.ApplyBatch(entries) {
		if r.Err != nil {
			out[pos[j]] = r.Err
		}
	}
	return out
}

// Snapshot pins the store's current state; Persist streams it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.store.BeginSnapshot()
	if err != nil {
		return nil, err
	}
	return &snapshot{s: s, done: f.Snapshotted}, nil
}

// Restore replaces the store with a snapshot.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return f.store.Restore(rc)
}

type snapshot struct {
	s    *meta.Snapshot
	done func(time.Duration)
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	if _, err := s.s.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	if s.done != nil {
		s.done(time.Since(start))
	}
	return sink.Close()
}

func (s *snapshot) Release() { s.s.Release() }
