package meta

import (
	"errors"
	"testing"
)

// TestWireError: a command's refusal crosses between nodes with its
// sentinel, its client message and a stale refusal's preconditions.
func TestWireError(t *testing.T) {
	stale := &StaleError{Pre: Pre{Space: SpaceUserNames, Key: "k", Index: 3}, Found: Pre{Space: SpaceUserNames, Key: "k", Index: 5}}
	for _, err := range []error{NotFoundf("repository %s", "r1"), Conflictf("version exists"), Invalidf("bad name"),
		ErrLastAdmin, ErrCompacted, ErrNotFound, stale, errors.New("disk on fire")} {
		back := ToWire(err).Err()
		if back.Error() != err.Error() {
			t.Errorf("%v came back as %v", err, back)
		}
		for _, s := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrStale, ErrCompacted} {
			if errors.Is(err, s) != errors.Is(back, s) {
				t.Errorf("%v: errors.Is(%v) changed", err, s)
			}
		}
	}
	var st *StaleError
	if !errors.As(ToWire(stale).Err(), &st) || st.Found.Index != 5 {
		t.Fatal("a stale refusal lost its preconditions")
	}
	if ToWire(nil) != nil || (*WireError)(nil).Err() != nil {
		t.Fatal("nil is not nil")
	}
}
