// Package seen collects the artifacts downloaded since they were last
// reported, each once however often it was downloaded: what an origin
// records as their last download day, and what an edge reports to an
// origin with its heartbeat. A set is bounded: beyond its size further
// artifacts are dropped (and counted) until a report takes some.
package seen

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Set is a bounded set of artifact ids.
type Set struct {
	mu      sync.Mutex
	ids     map[string]struct{}
	max     int
	dropped atomic.Int64
}

// New returns a set of at most max ids.
func New(max int) *Set { return &Set{ids: map[string]struct{}{}, max: max} }

// Add notes a download of artifact id.
func (s *Set) Add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return
	}
	if len(s.ids) >= s.max {
		s.dropped.Add(1)
		return
	}
	s.ids[id] = struct{}{}
}

// Take removes and returns at most n ids, in order.
func (s *Set) Take(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, min(n, len(s.ids)))
	for id := range s.ids {
		if len(out) == n {
			break
		}
		out = append(out, id)
	}
	for _, id := range out {
		delete(s.ids, id)
	}
	slices.Sort(out)
	return out
}

// Return puts back ids a report could not deliver (within the bound).
func (s *Set) Return(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		if len(s.ids) >= s.max {
			s.dropped.Add(int64(len(ids) - i))
			return
		}
		s.ids[id] = struct{}{}
	}
}

// Len is how many ids wait.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// Dropped is how many downloads were not kept because the set was full.
func (s *Set) Dropped() int64 { return s.dropped.Load() }
