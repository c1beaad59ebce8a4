package meta

import (
	"fmt"
	"maps"
	"slices"
)

// Record kinds and commands are each declared once, in the file of their
// domain (users.go declares the user kind and the user commands), with
// declareKind and declareCommand from an init function. The numbers are
// append only: they travel in the log, in snapshots and to edges.
//
// Adding a record kind and a command is one file:
//
//	const (
//		KindNote       Kind    = 30 // kinds and lookup spaces share numbers
//		SpaceNoteNames Space   = 31
//		CmdNotePut     CmdType = 56
//	)
//
//	func init() {
//		declareKind(KindNote, kindDecl{Name: "notes", Bucket: "notes", Index: indexNote,
//			Lookups: []lookupDecl{{SpaceNoteNames, "note names", "note_names"}}})
//		declareCommand(CmdNotePut, func() Command { return new(NotePut) })
//	}
//
// with the Note record, the NotePut command (Type, Scope, apply) and its
// index hook beside them. A cluster learns the new command as its origins
// are upgraded: the leader commits one only once every voter knows it
// (Known, CommandTypesOf); edges are sent only the kinds they know.

// kindDecl declares a record kind.
type kindDecl struct {
	Name   string // as the feed and errors name it
	Bucket string
	// Repo names the repository a record belongs to; nil: none (global).
	Repo func(key string, body []byte) string
	// Index keeps derived buckets in step with a write: before is nil on
	// create, after nil on delete. Nil: none.
	Index func(tx *Tx, key string, before, after []byte) error
	// Derived are the buckets Index keeps, besides lookup spaces.
	Derived [][]byte
	// Lookups are the unique indexes decisions look the kind's records
	// up by (preconditions name them).
	Lookups []lookupDecl
	// Unfed kinds stay out of the change feed: only origins hold them,
	// and they come and go in numbers (events, deliveries) that would
	// only fill the feed with entries and tombstones no edge reads.
	Unfed bool
}

// lookupDecl declares a lookup space.
type lookupDecl struct {
	Space  Space
	Name   string
	Bucket string
}

// kindInfo is what the record layer needs to know of a kind.
type kindInfo struct {
	repo  func(key string, body []byte) string
	index func(tx *Tx, key string, before, after []byte) error
}

type spaceInfo struct {
	name   string
	bucket []byte
}

var (
	kinds    = map[Kind]kindInfo{}
	spaces   = map[Space]spaceInfo{}
	unfed    = map[Kind]bool{}
	derived  [][]byte
	commands = map[CmdType]func() Command{}
)

func declareKind(k Kind, d kindDecl) {
	if _, dup := kinds[k]; dup {
		panic(fmt.Sprintf("meta: kind %d declared twice", k))
	}
	info := kindInfo{repo: d.Repo, index: d.Index}
	if info.repo == nil {
		info.repo = global
	}
	if info.index == nil {
		info.index = func(*Tx, string, []byte, []byte) error { return nil }
	}
	kinds[k] = info
	unfed[k] = d.Unfed
	declareSpace(Space(k), d.Name, d.Bucket)
	for _, l := range d.Lookups {
		declareSpace(l.Space, l.Name, l.Bucket)
	}
	derived = append(derived, d.Derived...)
}

func declareSpace(s Space, name, bucket string) {
	if _, dup := spaces[s]; dup {
		panic(fmt.Sprintf("meta: space %d declared twice", s))
	}
	spaces[s] = spaceInfo{name: name, bucket: []byte(bucket)}
}

// declareCommand registers a command type (with IgnorableFlag when builds
// that do not know it may skip it) and how to make an empty one to decode
// into.
func declareCommand(t CmdType, mk func() Command) {
	if _, dup := commands[t]; dup || t&^IgnorableFlag == 0 {
		panic(fmt.Sprintf("meta: command type %d declared twice or out of range", t))
	}
	if !forgotten[t] {
		commands[t] = mk
	}
}

// forgotten are command types a build for the mixed-version test leaves
// out, as an older Depot would not know a command added after it
// (legacy_build.go); empty in every other build.
var forgotten = map[CmdType]bool{}

func forget(t CmdType) bool { forgotten[t] = true; return true }

func global(string, []byte) string { return "" }

// Kinds lists the record kinds in order.
func Kinds() []Kind { return slices.Sorted(maps.Keys(kinds)) }

// CommandTypes lists every declared command type in order.
func CommandTypes() []CmdType { return slices.Sorted(maps.Keys(commands)) }
