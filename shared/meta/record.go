package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Records. Every record lives in the bucket of its kind under its key,
// stored as the 8-byte big-endian Raft index at which it last changed (its
// modify index) followed by its JSON. Secondary indexes are derived from
// records by the kind's index hook, in the same transaction, whoever
// writes the record: a command, a snapshot restore or (on an edge) the
// change feed. Every write also files the record in the change feed
// (changes.go); a delete leaves a tombstone there.

// Kind identifies a record kind in the change feed and in snapshots.
// Append only: numbers travel between nodes and into snapshots.
type Kind uint8

// Space is a keyspace whose values begin with a modify index: the records
// of each kind (same number as the kind) and the unique indexes decisions
// look records up by. Preconditions name a space; the numbers travel in
// the log, so they never change.
type Space uint8

func (s Space) String() string {
	if i, ok := spaces[s]; ok {
		return i.name
	}
	return fmt.Sprintf("space %d", s)
}

// The store's own buckets; the derived buckets of each kind are declared
// with it (declareKind).
var (
	bSys       = []byte("sys")
	bChanges   = []byte("changes")     // index, kind, key -> deleted flag, repo id
	bTombs     = []byte("tombs")       // kind, key -> index of the delete
	bTombOrder = []byte("tomb_order")  // index, kind, key -> "" (compaction order)
	bCounts    = []byte("kind_counts") // kind -> how many records of it are kept
)

// lateIndexes are derived buckets added after stores were first written:
// a store opened without one builds it from the records at once. A store
// another build has written since this one last did (an older build that
// does not keep them, after a downgrade) has them built again: each
// write transaction of this build marks itself and how many of them it
// keeps (markIndexed). New ones are appended.
var lateIndexes = []lateIndex{
	{[][]byte{bPublicRepos}, buildPublicRepos},
	{[][]byte{bPkgGrams, bGramCounts}, buildPkgGrams},
	{[][]byte{bCounts}, buildCounts},
	{[][]byte{bSessExpiry}, buildSessExpiry},
	{[][]byte{bRefOrder}, buildRefOrder},
	{[][]byte{bChecksums}, buildChecksums},
	{[][]byte{bPkgNames}, buildPkgNames},
	{[][]byte{bFileNames}, buildFileNames},
}

type lateIndex struct {
	buckets [][]byte // the first is the one that says whether it was built
	build   func(tx *Tx) error
}

func allBuckets() [][]byte {
	out := append([][]byte{bSys, bChanges, bTombs, bTombOrder, bCounts}, derived...)
	for _, s := range spaces {
		out = append(out, s.bucket)
	}
	return out
}

func (k Kind) String() string { return Space(k).String() }

// Tx is a transaction on the store: reads are in the domain files, writes
// only happen inside command apply.
type Tx struct {
	tx *bolt.Tx
	// idx is the log index being applied (write transactions only): the
	// modify index of everything written.
	idx uint64
	// reads, when set, records what a decision read, for its
	// preconditions (see Store.Decide).
	reads *readSet
	// evIdx and evN number the events recorded at one index.
	evIdx uint64
	evN   int
	// local marks a follower forgetting records on its own (Forget): no
	// tombstones, for the origin has not deleted them and may send them
	// again at the index they have.
	local bool
	// touched collects what a write transaction changed (memo.go).
	touched *touched
	// store is set in a view opened by Store.View, and viewedAt is the
	// visible change number when it was: memos decide in it (memo.go).
	store    *Store
	viewedAt uint64
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func getU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// withIndex prefixes body with a modify index.
func withIndex(idx uint64, body []byte) []byte {
	out := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint64(out, idx)
	return append(out, body...)
}

// key joins parts with NUL, which no name or id contains.
func key(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return string(b)
}

func (tx *Tx) bucket(name []byte) *bolt.Bucket { return tx.tx.Bucket(name) }

func (tx *Tx) space(s Space) *bolt.Bucket { return tx.tx.Bucket(spaces[s].bucket) }

// lookup reads one key of a space: its value after the modify index, and
// that index (0 when absent). A tracked transaction remembers it.
func (tx *Tx) lookup(s Space, k string) ([]byte, uint64) {
	v := tx.space(s).Get([]byte(k))
	var idx uint64
	if v != nil {
		idx = getU64(v)
		v = v[8:]
	}
	if tx.reads != nil {
		tx.reads.add(Pre{Space: s, Key: k, Index: idx})
	}
	return v, idx
}

// scan visits the keys of a space under prefix in order, with their values
// after the modify index; fn returning errStop ends the visit. A tracked
// transaction remembers the whole range (count and highest index), so
// that a key added under the prefix later makes the decision stale too.
func (tx *Tx) scan(s Space, prefix string, fn func(k string, v []byte) error) error {
	p := []byte(prefix)
	cur := tx.space(s).Cursor()
	count, max := 0, uint64(0)
	stopped := false
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		count++
		if i := getU64(v); i > max {
			max = i
		}
		if stopped {
			if tx.reads == nil {
				break
			}
			continue
		}
		if err := fn(string(k), v[8:]); err == errStop {
			stopped = true
		} else if err != nil {
			return err
		}
	}
	if tx.reads != nil {
		tx.reads.add(Pre{Space: s, Key: prefix, Prefix: true, Count: count, Index: max})
	}
	return nil
}

// current reports what a precondition finds now.
func (tx *Tx) current(p Pre) Pre {
	found := Pre{Space: p.Space, Key: p.Key, Prefix: p.Prefix}
	b := tx.space(p.Space)
	if b == nil {
		return found
	}
	if !p.Prefix {
		if v := b.Get([]byte(p.Key)); v != nil {
			found.Index = getU64(v)
		}
		return found
	}
	pk := []byte(p.Key)
	cur := b.Cursor()
	for k, v := cur.Seek(pk); k != nil && bytes.HasPrefix(k, pk); k, v = cur.Next() {
		found.Count++
		if i := getU64(v); i > found.Index {
			found.Index = i
		}
	}
	return found
}

// check refuses with a StaleError when a precondition no longer holds.
func (tx *Tx) check(pres []Pre) error {
	for _, p := range pres {
		if _, ok := spaces[p.Space]; !ok {
			return Invalidf("precondition on unknown space %d", p.Space)
		}
		if f := tx.current(p); f.Index != p.Index || f.Count != p.Count {
			return &StaleError{Pre: p, Found: f}
		}
	}
	return nil
}

// setIndexEntry writes a lookup-space entry for the record being applied.
func (tx *Tx) setIndexEntry(s Space, k string, body []byte) error {
	return tx.space(s).Put([]byte(k), withIndex(tx.idx, body))
}

func (tx *Tx) delKey(b []byte, k string) error { return tx.bucket(b).Delete([]byte(k)) }

func (tx *Tx) setKey(b []byte, k string) error { return tx.bucket(b).Put([]byte(k), []byte{}) }

// prefixKeys collects the keys of a plain bucket under prefix, with the
// prefix cut off.
func (tx *Tx) prefixKeys(b []byte, prefix string) []string { return tx.prefixKeysN(b, prefix, 0) }

// prefixKeysN is prefixKeys stopping after n keys (0 = all).
func (tx *Tx) prefixKeysN(b []byte, prefix string, n int) []string {
	var out []string
	p := []byte(prefix)
	cur := tx.bucket(b).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p) && (n == 0 || len(out) < n); k, _ = cur.Next() {
		out = append(out, string(k[len(p):]))
	}
	return out
}

// under lists the keys of a space under prefix and the values after their
// modify index, untracked: for commands that remove what is there.
func (tx *Tx) under(s Space, prefix string) (keys, values []string) {
	p := []byte(prefix)
	cur := tx.space(s).Cursor()
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		keys, values = append(keys, string(k)), append(values, string(v[8:]))
	}
	return keys, values
}

// delAll deletes records of one kind.
func (tx *Tx) delAll(k Kind, ids []string) error {
	for _, id := range ids {
		if err := tx.delRec(k, id); err != nil {
			return err
		}
	}
	return nil
}

// byName reads the records a name index points at, in name order.
func byName[T any](tx *Tx, names Space, get func(id string) (*T, error)) ([]T, error) {
	var out []T
	err := tx.scan(names, "", func(_ string, id []byte) error {
		v, err := get(string(id))
		if err == nil {
			out = append(out, *v)
		}
		return err
	})
	return out, err
}

// listRecs decodes the records of kind k whose keys start with prefix,
// in key order.
func listRecs[T any](tx *Tx, k Kind, prefix string) ([]T, error) {
	var out []T
	err := tx.scan(Space(k), prefix, func(_ string, v []byte) error {
		var rec T
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// getRec reads and decodes one record; absent is ErrNotFound naming what.
func getRec[T any](tx *Tx, k Kind, id, what string) (*T, error) {
	raw, _ := tx.lookup(Space(k), id)
	if raw == nil {
		return nil, NotFoundf("%s %s", what, id)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("meta: corrupt %s record %q: %w", k, id, err)
	}
	return &v, nil
}

// exists reports whether a record is present (tracked like a read).
func (tx *Tx) exists(k Kind, id string) bool {
	raw, _ := tx.lookup(Space(k), id)
	return raw != nil
}

// putRec writes a record at the index being applied.
func (tx *Tx) putRec(k Kind, id string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.putRaw(k, id, tx.idx, body)
}

// putRaw writes a record with its modify index: the one place records are
// written, so indexes and the change feed always follow.
func (tx *Tx) putRaw(k Kind, id string, idx uint64, body []byte) error {
	info, ok := kinds[k]
	if !ok {
		return Invalidf("unknown record kind %d", k)
	}
	b := tx.space(Space(k))
	var old []byte
	if v := b.Get([]byte(id)); v != nil {
		old = bytes.Clone(v)
		if err := tx.dropChange(getU64(old), k, id); err != nil {
			return err
		}
		old = old[8:]
	} else if err := tx.dropTomb(k, id); err != nil {
		return err
	}
	if err := info.index(tx, id, old, body); err != nil {
		return err
	}
	if old == nil {
		if err := tx.addCount(k, 1); err != nil {
			return err
		}
	}
	if err := b.Put([]byte(id), withIndex(idx, body)); err != nil {
		return err
	}
	if unfed[k] {
		tx.touch(k, "")
		return nil
	}
	repo := info.repo(id, body)
	tx.touch(k, repo)
	return tx.addChange(idx, k, id, repo, false)
}

func (tx *Tx) touch(k Kind, repo string) {
	if tx.touched != nil {
		tx.touched.add(k, repo)
	}
}

// delRec deletes a record, leaving a tombstone in the change feed.
func (tx *Tx) delRec(k Kind, id string) error {
	info := kinds[k]
	b := tx.space(Space(k))
	v := b.Get([]byte(id))
	if v == nil {
		return NotFoundf("%s %s", k, id)
	}
	old := bytes.Clone(v)
	if err := tx.dropChange(getU64(old), k, id); err != nil {
		return err
	}
	if err := info.index(tx, id, old[8:], nil); err != nil {
		return err
	}
	if err := tx.addCount(k, -1); err != nil {
		return err
	}
	if err := b.Delete([]byte(id)); err != nil {
		return err
	}
	if unfed[k] {
		tx.touch(k, "")
		return nil
	}
	repo := info.repo(id, old[8:])
	tx.touch(k, repo)
	if tx.local {
		return nil
	}
	return tx.addTomb(tx.idx, k, id, repo)
}

// Count is how many records of kind k the store keeps, from a counter
// kept with every write: no walk over the records (bbolt's Bucket.Stats
// visits every page).
func (tx *Tx) Count(k Kind) int {
	return int(getU64(tx.bucket(bCounts).Get([]byte{byte(k)})))
}

func (tx *Tx) addCount(k Kind, d int) error {
	key := []byte{byte(k)}
	n := int64(getU64(tx.bucket(bCounts).Get(key))) + int64(d)
	return tx.bucket(bCounts).Put(key, u64(uint64(max(n, 0))))
}

// buildCounts counts the records of every kind once, for a store written
// before the counters were kept.
func buildCounts(tx *Tx) error {
	for k := range kinds {
		n := 0
		cur := tx.space(Space(k)).Cursor()
		for key, _ := cur.First(); key != nil; key, _ = cur.Next() {
			n++
		}
		if err := tx.bucket(bCounts).Put([]byte{byte(k)}, u64(uint64(n))); err != nil {
			return err
		}
	}
	return nil
}

// putInOrder puts keys, with empty values, into b in key order. A late
// index built in one transaction in another order is slow: bbolt splits
// nodes only at commit, so each insert moves an ever larger node (minutes
// at a million keys, against seconds in order).
func putInOrder(b *bolt.Bucket, keys [][]byte) error {
	slices.SortFunc(keys, bytes.Compare)
	for _, k := range keys {
		if err := b.Put(k, []byte{}); err != nil {
			return err
		}
	}
	return nil
}

// decodePair decodes the old and new bodies an index hook is given.
func decodePair[T any](before, after []byte) (*T, *T, error) {
	var o, n *T
	if before != nil {
		o = new(T)
		if err := json.Unmarshal(before, o); err != nil {
			return nil, nil, err
		}
	}
	if after != nil {
		n = new(T)
		if err := json.Unmarshal(after, n); err != nil {
			return nil, nil, err
		}
	}
	return o, n, nil
}
