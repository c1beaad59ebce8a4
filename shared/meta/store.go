package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// schemaVersion is kept in the sys bucket. A store written by another
// layout is refused with a clear message rather than misread.
const schemaVersion = 2

var (
	keyLastApplied = []byte("last_applied")
	keyIndexedTo   = []byte("indexed_to") // which write kept which late indexes (markIndexed)
	keySchema      = []byte("schema")
)

// DefaultTombstoneRetention is how many log indexes a deletion stays in
// the change feed.
const DefaultTombstoneRetention = 100_000

// Store is the bbolt-backed metadata store. Restore swaps the database
// file underneath, so every access goes through mu.
type Store struct {
	mu   sync.RWMutex
	db   *bolt.DB
	path string

	retention uint64

	applied atomic.Uint64
	waitMu  sync.Mutex
	waitCh  chan struct{} // closed and replaced when applied moves

	// Observe, when set before the store applies anything, is told how
	// long each command took to apply (metrics).
	Observe func(c Command, d time.Duration)

	// marks number the writes, for memos (memo.go).
	marks changeMarks

	// stats remembers repositories' totals (repoStats), read by every
	// repository record and package listing.
	statsOnce sync.Once
	stats     *Memo[string, repoStats]
}

// maxRememberedStats bounds the repositories whose totals are remembered.
const maxRememberedStats = 100_000

func (s *Store) statsMemo() *Memo[string, repoStats] {
	s.statsOnce.Do(func() {
		s.stats = NewMemo[string, repoStats](s, maxRememberedStats, []Kind{KindRepo}, []Kind{KindArtifact})
	})
	return s.stats
}

// Options tune a store; the zero value is the default.
type Options struct {
	// TombstoneRetention is how many indexes a deletion stays in the
	// change feed (0 = DefaultTombstoneRetention).
	TombstoneRetention uint64
}

// Open opens (or creates) the store at path.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith opens (or creates) the store at path with options.
func OpenWith(path string, o Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, retention: o.TombstoneRetention, waitCh: make(chan struct{})}
	if s.retention == 0 {
		s.retention = DefaultTombstoneRetention
	}
	if err := db.View(func(btx *bolt.Tx) error {
		s.applied.Store((&Tx{tx: btx}).lastApplied())
		return nil
	}); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		sys := tx.Bucket(bSys)
		if sys != nil && getU64(sys.Get(keySchema)) != schemaVersion {
			return fmt.Errorf("meta: %s was written by an earlier development version of Depot (layout %d, this one reads %d); start from an empty data directory",
				path, getU64(sys.Get(keySchema)), schemaVersion)
		}
		// Which late indexes the last write kept (see markIndexed): all
		// of them again when another build wrote since; those after the
		// ones it kept; those missing. (Without a mark, no build that
		// marks wrote here, and the builds that did kept what they had.)
		kept := len(lateIndexes)
		if sys != nil {
			if mark := sys.Get(keyIndexedTo); mark != nil {
				kept = 0
				if len(mark) == 16 && getU64(mark[:8]) == uint64(tx.ID()-1) {
					kept = int(getU64(mark[8:]))
				}
			}
		}
		var missing []func(*Tx) error
		for i, ix := range lateIndexes {
			if sys == nil || (i < kept && tx.Bucket(ix.buckets[0]) != nil) {
				continue
			}
			for _, b := range ix.buckets {
				if tx.Bucket(b) == nil {
					continue
				}
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
			missing = append(missing, ix.build)
		}
		for _, b := range allBuckets() {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		for _, build := range missing {
			if err := build(&Tx{tx: tx}); err != nil {
				return fmt.Errorf("meta: building an index: %w", err)
			}
		}
		if err := markIndexed(tx); err != nil {
			return err
		}
		return tx.Bucket(bSys).Put(keySchema, u64(schemaVersion))
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// markIndexed records, in every write transaction of this build, that the
// first len(lateIndexes) late indexes are complete as of this
// transaction (its bbolt id). A store opened with a mark naming another
// transaction than the last was written since by a build that does not
// mark (older): its late indexes are built again; one whose mark names
// fewer late indexes was last written by a build that kept only those.
func markIndexed(btx *bolt.Tx) error {
	return btx.Bucket(bSys).Put(keyIndexedTo, append(u64(uint64(btx.ID())), u64(uint64(len(lateIndexes)))...))
}

// Close closes the store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Close()
}

// View runs fn on a consistent read-only view.
func (s *Store) View(fn func(*Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	at := s.marks.visible.Load() // before the view: what memos decide in it is at least this fresh
	return s.db.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx, store: s, viewedAt: at}) })
}

// ViewTracked runs fn on a consistent view that remembers what fn read,
// and returns that as the preconditions of a command decided from it.
func (s *Store) ViewTracked(fn func(*Tx) error) ([]Pre, error) {
	rs := &readSet{}
	err := s.View(func(tx *Tx) error {
		tx.reads = rs
		return fn(tx)
	})
	return rs.pres, err
}

// LastApplied is the index of the last applied log entry.
func (s *Store) LastApplied() uint64 { return s.applied.Load() }

// WaitIndex blocks until this store has applied index i, or ctx ends.
func (s *Store) WaitIndex(ctx context.Context, i uint64) error {
	for {
		s.waitMu.Lock()
		ch := s.waitCh
		s.waitMu.Unlock()
		if s.applied.Load() >= i {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) setApplied(i uint64) {
	s.applied.Store(i)
	s.waitMu.Lock()
	close(s.waitCh)
	s.waitCh = make(chan struct{})
	s.waitMu.Unlock()
}

// Entry is one log entry to apply.
type Entry struct {
	Index uint64
	Data  []byte
}

// Result is what applying one command returned: an error for the caller
// (a domain sentinel such as ErrConflict) or nil.
type Result struct {
	Err error
}

// errRollback aborts a batch transaction so that it can be replayed
// without the command that failed.
var errRollback = errors.New("meta: roll back")

// ApplyBatch applies entries in one bbolt transaction. Entries at or below
// last_applied were applied before a restart and are skipped; an entry
// without an index (tests, tools) takes the next one. A command that fails
// changes nothing, even halfway through: the transaction is rolled back and
// the batch replayed without it (it fails the same way again, commands
// being deterministic), so the batch goes on. A command of an unknown
// type marked ignorable is skipped; any other undecodable command panics:
// skipping it would fork this replica (the state machine checks entries
// with Applicable first and stops without applying).
func (s *Store) ApplyBatch(entries []Entry) []Result {
	cmds := make([]Command, len(entries))
	applied := s.LastApplied()
	for i, e := range entries {
		if e.Index != 0 && e.Index <= applied {
			continue // applied already (a log replayed at start): not decoded
		}
		c, err := Decode(e.Data)
		if err != nil && !errors.Is(err, errIgnorable) {
			panic(fmt.Sprintf("meta: log entry %d: %v", e.Index, err))
		}
		cmds[i] = c
	}
	failed := map[int]error{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for {
		results := make([]Result, len(entries))
		var last uint64
		failedAt := -1
		err := s.update(func(tx *Tx) error {
			last = tx.lastApplied()
			for i, e := range entries {
				idx := e.Index
				if idx == 0 {
					idx = last + 1
				}
				if idx <= last {
					continue
				}
				last = idx
				if err, ok := failed[i]; ok {
					results[i].Err = err
					continue
				}
				if cmds[i] == nil {
					continue // an ignorable command of a newer build
				}
				tx.idx = idx
				start := time.Now()
				if err := applyCommand(tx, cmds[i]); err != nil {
					failed[i], failedAt = err, i
					return errRollback
				}
				if s.Observe != nil {
					s.Observe(cmds[i], time.Since(start))
				}
			}
			return tx.settle(last, s.retention)
		})
		if err == errRollback && failedAt >= 0 {
			continue
		}
		if err != nil {
			// The disk failed under us; continuing would diverge from the log.
			panic(fmt.Sprintf("meta: apply batch: %v", err))
		}
		s.setApplied(last)
		return results
	}
}

// Applicable reports whether this build can apply an encoded command:
// nil, or ErrUnknownCommand for a type only a newer build knows (and
// that may not be skipped).
func Applicable(data []byte) error {
	_, err := Decode(data)
	if err == nil || errors.Is(err, errIgnorable) {
		return nil
	}
	return err
}

// Apply applies one command at index (0 = the next index, for tests and
// tools).
func (s *Store) Apply(index uint64, c Command) error {
	data, err := Encode(c)
	if err != nil {
		return err
	}
	return s.ApplyBatch([]Entry{{Index: index, Data: data}})[0].Err
}

// settle ends a transaction that applied up to index last: tombstones
// older than the retention are forgotten and last is recorded as applied.
func (tx *Tx) settle(last, retention uint64) error {
	if last > retention {
		if err := tx.compact(last - retention); err != nil {
			return err
		}
	}
	return tx.tx.Bucket(bSys).Put(keyLastApplied, u64(last))
}

func (tx *Tx) lastApplied() uint64 {
	v := tx.tx.Bucket(bSys).Get(keyLastApplied)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

var errStop = errors.New("stop")
