package meta

import (
	"errors"
	"fmt"
	"strings"
)

// Domain sentinels. Stores return these (wrapped with a message); the
// transports map them to status codes.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")

	// ErrStale refuses a checked command whose preconditions no longer
	// hold: something it was decided from changed before it was applied.
	// Unlike ErrConflict it is not the client's fault; the decision is
	// made again from a fresh read (see StaleError).
	ErrStale = errors.New("stale: state changed since it was read")

	// ErrCompacted says a change feed reader asked for changes older than
	// the deletions this store still remembers; it must resync.
	ErrCompacted = errors.New("changes compacted: resync needed")

	// ErrNoLeader: the cluster has no leader (an election, or a minority
	// cut off from the rest), so no write can commit now.
	ErrNoLeader = errors.New("no leader: the cluster cannot commit writes now")

	// ErrUnknownOutcome: a write went to the leader and its answer never
	// came back (the leader died or lost its leadership meanwhile); it may
	// or may not have been committed.
	ErrUnknownOutcome = errors.New("the leader did not answer: the write may or may not have been committed")

	// ErrUpgrading refuses a command of a type some voter of the cluster
	// does not know yet (it runs an older Depot): nothing was written;
	// it can be committed once every origin runs the newer build.
	ErrUpgrading = errors.New("an origin of the cluster runs an older Depot that does not know this kind of change: nothing was written; upgrade every origin, then retry")

	// ErrLastAdmin refuses a delete or demotion that would leave no
	// administrator.
	ErrLastAdmin = fmt.Errorf("%w: cannot remove the last administrator", ErrConflict)
)

// StaleError is the typed refusal of a checked command: the first
// precondition that did not hold and what was found instead.
type StaleError struct {
	Pre   Pre
	Found Pre
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale: %s %q was at index %d (%d records), now %d (%d)",
		e.Pre.Space, e.Pre.Key, e.Pre.Index, e.Pre.Count, e.Found.Index, e.Found.Count)
}

// Unwrap makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Unwrap() error { return ErrStale }

// NotFoundf wraps ErrNotFound with a message meant for the client.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
}

// Conflictf wraps ErrConflict with a message meant for the client.
func Conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConflict}, args...)...)
}

// Invalidf wraps ErrInvalid with a message.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// WireError is a command's refusal as it travels between nodes (a write
// decided on a follower and applied by the leader): its sentinel, its
// message, and a StaleError's preconditions, so the deciding node sees
// the error the leader's store returned.
type WireError struct {
	Kind  string `json:"kind"` // not_found, conflict, invalid, stale, compacted, upgrading or error
	Text  string `json:"text"`
	Pre   *Pre   `json:"pre,omitempty"`
	Found *Pre   `json:"found,omitempty"`
}

var wireKinds = []struct {
	kind     string
	sentinel error
}{{"not_found", ErrNotFound}, {"conflict", ErrConflict}, {"invalid", ErrInvalid}, {"compacted", ErrCompacted}, {"upgrading", ErrUpgrading}}

// ToWire encodes err; nil for nil.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	var stale *StaleError
	if errors.As(err, &stale) {
		return &WireError{Kind: "stale", Text: err.Error(), Pre: &stale.Pre, Found: &stale.Found}
	}
	for _, k := range wireKinds {
		if errors.Is(err, k.sentinel) {
			return &WireError{Kind: k.kind, Text: strings.TrimPrefix(err.Error(), k.sentinel.Error()+": ")}
		}
	}
	return &WireError{Kind: "error", Text: err.Error()}
}

// Err decodes w back into an error with the same sentinel and message.
func (w *WireError) Err() error {
	if w == nil {
		return nil
	}
	if w.Kind == "stale" && w.Pre != nil && w.Found != nil {
		return &StaleError{Pre: *w.Pre, Found: *w.Found}
	}
	for _, k := range wireKinds {
		if w.Kind == k.kind {
			if w.Text == k.sentinel.Error() {
				return k.sentinel
			}
			return fmt.Errorf("%w: %s", k.sentinel, w.Text)
		}
	}
	return errors.New(w.Text)
}
