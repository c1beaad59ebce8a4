package meta

import (
	"errors"
	"fmt"
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
