package meta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// CmdType identifies a command on the wire. Append only: a number, once
// used, keeps its meaning forever, because old log entries are replayed.
type CmdType uint16

// IgnorableFlag, set in a command type, lets a build that does not know
// the type skip it: for commands that only touch state such a build does
// not have (a new kind's records). Any other unknown type stops the
// build applying the log (see Decode).
const IgnorableFlag CmdType = 0x8000

// CmdChecked wraps a command with the preconditions of its decision.
const CmdChecked CmdType = 20

func init() { declareCommand(CmdChecked, func() Command { return new(Checked) }) }

// wireVersion is the first byte of every encoded command. A future change
// of the envelope gets a new version; Decode keeps reading the old ones.
const wireVersion byte = 1

// Command is a metadata change. Payloads carry everything apply needs,
// including ids and timestamps, so applying is deterministic.
type Command interface {
	Type() CmdType
	// Scope is the id of the repository the command touches, or "" for a
	// global command (users, groups, sessions...).
	Scope() string
	// apply changes the store; an error leaves it as it was (ApplyBatch
	// rolls back).
	apply(tx *Tx) error
}

func applyCommand(tx *Tx, c Command) error { return c.apply(tx) }

// CommandName names a command's type for people and metrics: its Go
// type's name ("UserCreate"); a checked command is named by the command
// it wraps.
func CommandName(c Command) string {
	if ch, ok := c.(*Checked); ok && ch.Cmd != nil {
		c = ch.Cmd
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", c), "*meta.")
}

// Pre is one precondition of a checked command: a key of a space was at
// modify index Index (0 = absent) or, with Prefix, the keys under Key
// numbered Count with Index the highest modify index among them.
type Pre struct {
	Space  Space  `json:"s"`
	Key    string `json:"k"`
	Prefix bool   `json:"p,omitempty"`
	Count  int    `json:"n,omitempty"`
	Index  uint64 `json:"i,omitempty"`
}

// readSet collects the preconditions of a decision, each once.
type readSet struct {
	seen map[Pre]bool
	pres []Pre
}

func (r *readSet) add(p Pre) {
	id := Pre{Space: p.Space, Key: p.Key, Prefix: p.Prefix}
	if r.seen == nil {
		r.seen = map[Pre]bool{}
	}
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	r.pres = append(r.pres, p)
}

// Checked applies Cmd only if every precondition still holds, else it is
// refused with a StaleError and changes nothing.
type Checked struct {
	Pre []Pre   `json:"pre"`
	Cmd Command `json:"-"`
}

// Type implements Command.
func (*Checked) Type() CmdType { return CmdChecked }

// Scope is the scope of the wrapped command.
func (c *Checked) Scope() string { return c.Cmd.Scope() }

func (c *Checked) apply(tx *Tx) error {
	if err := tx.check(c.Pre); err != nil {
		return err
	}
	return c.Cmd.apply(tx)
}

type checkedWire struct {
	Pre  []Pre           `json:"pre"`
	Type CmdType         `json:"type"`
	Cmd  json.RawMessage `json:"cmd"`
}

// MarshalJSON carries the wrapped command with its type.
func (c *Checked) MarshalJSON() ([]byte, error) {
	body, err := json.Marshal(c.Cmd)
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkedWire{Pre: c.Pre, Type: c.Cmd.Type(), Cmd: body})
}

// UnmarshalJSON decodes the wrapped command by its type.
func (c *Checked) UnmarshalJSON(b []byte) error {
	var w checkedWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Type == CmdChecked {
		return fmt.Errorf("meta: a checked command wraps another")
	}
	mk, err := maker(w.Type)
	if err != nil {
		return err
	}
	inner := mk()
	if err := json.Unmarshal(w.Cmd, inner); err != nil {
		return err
	}
	c.Pre, c.Cmd = w.Pre, inner
	return nil
}

// Encode renders a command for the log: version byte, big-endian uint16
// type, JSON payload.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 3, 3+len(body))
	out[0] = wireVersion
	binary.BigEndian.PutUint16(out[1:3], uint16(c.Type()))
	return append(out, body...), nil
}

// ErrUnknownCommand is a log entry of a command type this build does not
// know: one written by a newer Depot. Skipping it would fork this replica
// from the others, so the replica stops applying the log (the leader
// commits a type only once every voter knows it: Knows).
var ErrUnknownCommand = errors.New("meta: a command of a type this build of Depot does not know")

// errIgnorable is an unknown command whose type says it may be skipped.
var errIgnorable = errors.New("meta: unknown command that may be skipped")

// Decode parses an encoded command. An unknown version or type is an
// error (ErrUnknownCommand for a type written by a newer build).
func Decode(b []byte) (Command, error) {
	if len(b) < 3 {
		return nil, fmt.Errorf("meta: command too short (%d bytes)", len(b))
	}
	if b[0] != wireVersion {
		return nil, fmt.Errorf("meta: unknown command wire version %d", b[0])
	}
	t := CmdType(binary.BigEndian.Uint16(b[1:3]))
	mk, err := maker(t)
	if err != nil {
		return nil, err
	}
	c := mk()
	if err := json.Unmarshal(b[3:], c); err != nil {
		return nil, fmt.Errorf("meta: command %d: %w", t, err)
	}
	return c, nil
}

func maker(t CmdType) (func() Command, error) {
	mk, ok := commands[t]
	switch {
	case ok:
		return mk, nil
	case t&IgnorableFlag != 0:
		return nil, fmt.Errorf("%w: type %d", errIgnorable, t)
	}
	return nil, fmt.Errorf("%w: type %d", ErrUnknownCommand, t)
}

// CommandTypesOf reads the command types of an encoded command without
// decoding it: its own and, for a checked command, the one it wraps.
func CommandTypesOf(b []byte) ([]CmdType, error) {
	if len(b) < 3 || b[0] != wireVersion {
		return nil, fmt.Errorf("meta: not an encoded command")
	}
	t := CmdType(binary.BigEndian.Uint16(b[1:3]))
	if t != CmdChecked {
		return []CmdType{t}, nil
	}
	var w struct {
		Type CmdType `json:"type"`
	}
	if err := json.Unmarshal(b[3:], &w); err != nil {
		return nil, fmt.Errorf("meta: checked command: %w", err)
	}
	return []CmdType{t, w.Type}, nil
}

// legacyCommands is what a build from before origins advertised their
// command types knows: types 1 to 34.
const legacyCommands = "1-34"

// KnownCommands is the set of command types this build knows, as origins
// advertise it to each other: ranges, "1-34,36".
func KnownCommands() string {
	var parts []string
	types := CommandTypes()
	for i := 0; i < len(types); {
		j := i
		for j+1 < len(types) && types[j+1] == types[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(types[i])))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", types[i], types[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Knows reports whether a node that advertises set (KnownCommands; ""
// for a build from before they did) can apply a command of type t. An
// ignorable type is always applicable: a build that does not know it
// skips it.
func Knows(set string, t CmdType) bool {
	if t&IgnorableFlag != 0 {
		return true
	}
	if set == "" {
		set = legacyCommands
	}
	for _, part := range strings.Split(set, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 16)
		b, err2 := strconv.ParseUint(hi, 10, 16)
		if err1 == nil && err2 == nil && uint64(t) >= a && uint64(t) <= b {
			return true
		}
	}
	return false
}

// Committer commits a command through the log and returns its index once
// applied on this node; a refused command returns its error, with the
// index at which it was refused when known.
type Committer interface {
	Apply(ctx context.Context, c Command) (uint64, error)
}

// DecideAttempts bounds how often a decision is made again after its
// command was found stale.
const DecideAttempts = 8

// Decide reads, decides and commits: fn reads a consistent view of s and
// returns the command to commit (nil: nothing to do); the command carries
// what fn read as its preconditions. When another write got in between,
// the command is refused as stale, and Decide waits until s has seen that
// write and decides again, DecideAttempts times at most; then the last
// StaleError is returned. Node-local locks around Decide only save wasted
// attempts; correctness does not depend on them.
func Decide(ctx context.Context, s *Store, commit Committer, fn func(tx *Tx) (Command, error)) (uint64, error) {
	return DecideScreened(ctx, s, commit, fn, nil)
}

// DecideScreened is Decide with a screen: the command fn decided is shown
// to screen, outside the view, before it is committed; an error refuses
// it (a security policy refusing an upload, which may take the time of a
// scan: no view is held open for it). What screen reads is not a
// precondition of the command.
func DecideScreened(ctx context.Context, s *Store, commit Committer, fn func(tx *Tx) (Command, error), screen func(Command) error) (uint64, error) {
	var err error
	for attempt := 0; attempt < DecideAttempts; attempt++ {
		var cmd Command
		pres, verr := s.ViewTracked(func(tx *Tx) error {
			var err error
			cmd, err = fn(tx)
			return err
		})
		if verr != nil {
			return 0, verr
		}
		if cmd == nil {
			return 0, nil
		}
		if screen != nil {
			if err := screen(cmd); err != nil {
				return 0, err
			}
		}
		Stamp(ctx, cmd)
		var idx uint64
		idx, err = commit.Apply(ctx, &Checked{Pre: pres, Cmd: cmd})
		if !errors.Is(err, ErrStale) {
			return idx, err
		}
		// Read again only once this node has the write that got in.
		if idx > 0 {
			if werr := s.WaitIndex(ctx, idx); werr != nil {
				return 0, werr
			}
		}
		if attempt > 0 {
			// Spread contenders out: jittered, growing, at most ~50 ms.
			d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	return 0, err
}
