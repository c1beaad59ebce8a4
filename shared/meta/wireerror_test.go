package meta

import (
	"errors"
	"strings"
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

// TestReferencedBlobs: the digests records keep, paged in order, each
// once however many records keep it.
func TestReferencedBlobs(t *testing.T) {
	s := open(t)
	seed(t, s)
	for _, a := range []Artifact{art("b", "x/1/b", "x", "1", 1), art("a", "x/1/a", "x", "1", 1), art("c", "x/2/c", "x", "2", 1)} {
		if err := s.Apply(0, &ArtifactPut{Artifact: a}); err != nil {
			t.Fatal(err)
		}
	}
	two := art("a2", "x/3/a", "x", "3", 1)
	two.Digest = "sha256:a" // a second record keeping a
	if err := s.Apply(0, &ArtifactPut{Artifact: two}); err != nil {
		t.Fatal(err)
	}
	var all []string
	after := ""
	for {
		var page []string
		_ = s.View(func(tx *Tx) error { page, after = tx.ReferencedBlobs(after, 2); return nil })
		all = append(all, page...)
		if after == "" {
			break
		}
	}
	if got := strings.Join(all, " "); got != "sha256:a sha256:b sha256:c" {
		t.Fatalf("referenced blobs: %s", got)
	}
}
