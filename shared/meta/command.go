package meta

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// CmdType identifies a command on the wire. Append only: a number, once
// used, keeps its meaning forever, because old log entries are replayed.
type CmdType uint16

// Command types.
const (
	CmdUserCreate        CmdType = 1
	CmdUserUpdate        CmdType = 2
	CmdUserDelete        CmdType = 3
	CmdTokenCreate       CmdType = 4
	CmdTokenRevoke       CmdType = 5
	CmdSessionCreate     CmdType = 6
	CmdSessionRevoke     CmdType = 7
	CmdGroupCreate       CmdType = 8
	CmdGroupAddMembers   CmdType = 9
	CmdPermissionCreate  CmdType = 10
	CmdPermissionDelete  CmdType = 11
	CmdRepoCreate        CmdType = 12
	CmdRepoUpdate        CmdType = 13
	CmdRepoDelete        CmdType = 14
	CmdArtifactPut       CmdType = 15
	CmdArtifactDelete    CmdType = 16
	CmdSessionPurge      CmdType = 17
	CmdKVApply           CmdType = 18
	CmdArtifactsApply    CmdType = 19
	CmdChecked           CmdType = 20
	CmdEdgeCreate        CmdType = 21
	CmdEdgeDelete        CmdType = 22
	CmdEdgeAssign        CmdType = 23
	CmdEdgeUnassign      CmdType = 24
	CmdEdgeHeartbeat     CmdType = 25
	CmdWebhookCreate     CmdType = 26
	CmdWebhookUpdate     CmdType = 27
	CmdWebhookDelete     CmdType = 28
	CmdEventsRecord      CmdType = 29
	CmdDeliveriesEnqueue CmdType = 30
	CmdDeliveryCreate    CmdType = 31
	CmdDeliveryAttempt   CmdType = 32
	CmdDeliveryRedeliver CmdType = 33
	CmdEventsCompact     CmdType = 34
)

// commands is the registration table: every command type and how to make
// an empty one to decode into. Each command's apply lives beside its
// domain's records (users.go, repos.go, artifacts.go...).
var commands = map[CmdType]func() Command{
	CmdUserCreate:        func() Command { return new(UserCreate) },
	CmdUserUpdate:        func() Command { return new(UserUpdate) },
	CmdUserDelete:        func() Command { return new(UserDelete) },
	CmdTokenCreate:       func() Command { return new(TokenCreate) },
	CmdTokenRevoke:       func() Command { return new(TokenRevoke) },
	CmdSessionCreate:     func() Command { return new(SessionCreate) },
	CmdSessionRevoke:     func() Command { return new(SessionRevoke) },
	CmdSessionPurge:      func() Command { return new(SessionPurge) },
	CmdGroupCreate:       func() Command { return new(GroupCreate) },
	CmdGroupAddMembers:   func() Command { return new(GroupAddMembers) },
	CmdPermissionCreate:  func() Command { return new(PermissionCreate) },
	CmdPermissionDelete:  func() Command { return new(PermissionDelete) },
	CmdRepoCreate:        func() Command { return new(RepoCreate) },
	CmdRepoUpdate:        func() Command { return new(RepoUpdate) },
	CmdRepoDelete:        func() Command { return new(RepoDelete) },
	CmdArtifactPut:       func() Command { return new(ArtifactPut) },
	CmdArtifactDelete:    func() Command { return new(ArtifactDelete) },
	CmdKVApply:           func() Command { return new(KVApply) },
	CmdArtifactsApply:    func() Command { return new(ArtifactsApply) },
	CmdChecked:           func() Command { return new(Checked) },
	CmdEdgeCreate:        func() Command { return new(EdgeCreate) },
	CmdEdgeDelete:        func() Command { return new(EdgeDelete) },
	CmdEdgeAssign:        func() Command { return new(EdgeAssign) },
	CmdEdgeUnassign:      func() Command { return new(EdgeUnassign) },
	CmdEdgeHeartbeat:     func() Command { return new(EdgeHeartbeat) },
	CmdWebhookCreate:     func() Command { return new(WebhookCreate) },
	CmdWebhookUpdate:     func() Command { return new(WebhookUpdate) },
	CmdWebhookDelete:     func() Command { return new(WebhookDelete) },
	CmdEventsRecord:      func() Command { return new(EventsRecord) },
	CmdDeliveriesEnqueue: func() Command { return new(DeliveriesEnqueue) },
	CmdDeliveryCreate:    func() Command { return new(DeliveryCreate) },
	CmdDeliveryAttempt:   func() Command { return new(DeliveryAttempt) },
	CmdDeliveryRedeliver: func() Command { return new(DeliveryRedeliver) },
	CmdEventsCompact:     func() Command { return new(EventsCompact) },
}

// CommandTypes lists every registered command type in order.
func CommandTypes() []CmdType {
	out := make([]CmdType, 0, len(commands))
	for t := range commands {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

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
	mk, ok := commands[w.Type]
	if !ok || w.Type == CmdChecked {
		return fmt.Errorf("meta: checked command of type %d", w.Type)
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

// Decode parses an encoded command. An unknown version or type is an
// error; the state machine treats it as fatal, because skipping a command
// would fork this replica from the others.
func Decode(b []byte) (Command, error) {
	if len(b) < 3 {
		return nil, fmt.Errorf("meta: command too short (%d bytes)", len(b))
	}
	if b[0] != wireVersion {
		return nil, fmt.Errorf("meta: unknown command wire version %d", b[0])
	}
	t := CmdType(binary.BigEndian.Uint16(b[1:3]))
	mk, ok := commands[t]
	if !ok {
		return nil, fmt.Errorf("meta: unknown command type %d", t)
	}
	c := mk()
	if err := json.Unmarshal(b[3:], c); err != nil {
		return nil, fmt.Errorf("meta: command %d: %w", t, err)
	}
	return c, nil
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
