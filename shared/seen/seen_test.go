package seen

import (
	"maps"
	"slices"
	"testing"
)

// sorted is what the set holds, in order.
func (s *Set) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.ids))
}

// TestSet: each artifact once, bounded, taken in parts and given back.
func TestSet(t *testing.T) {
	s := New(3)
	for _, id := range []string{"b", "a", "b", "c", "d"} {
		s.Add(id)
	}
	if got := s.sorted(); !slices.Equal(got, []string{"a", "b", "c"}) || s.Dropped() != 1 {
		t.Fatalf("held %v, dropped %d", got, s.Dropped())
	}
	first := s.Take(2)
	if len(first) != 2 || s.Len() != 1 {
		t.Fatalf("took %v, %d left", first, s.Len())
	}
	s.Return(first)
	if s.Len() != 3 {
		t.Errorf("after giving back: %d", s.Len())
	}
	if all := s.Take(10); !slices.Equal(all, []string{"a", "b", "c"}) || s.Len() != 0 {
		t.Errorf("took %v", all)
	}
}
