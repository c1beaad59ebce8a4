package meta

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bucket names. Secondary indexes map a key to a primary id.
var (
	bSys           = []byte("sys")
	bUsers         = []byte("users")
	bUserNames     = []byte("user_names")
	bTokens        = []byte("tokens")
	bTokenHashes   = []byte("token_hashes")
	bSessions      = []byte("sessions")
	bGroups        = []byte("groups")
	bGroupNames    = []byte("group_names")
	bPermissions   = []byte("permissions")
	bRepos         = []byte("repos")
	bRepoNames     = []byte("repo_names")
	bArtifacts     = []byte("artifacts")
	bArtifactPaths = []byte("artifact_paths") // repoID \0 path -> artifact id
	bArtifactPkgs  = []byte("artifact_pkgs")  // repoID \0 package \0 version \0 artifact id -> ""
	bFormatKV      = []byte("format_kv")      // repoID \0 key -> format's JSON

	allBuckets = [][]byte{bSys, bUsers, bUserNames, bTokens, bTokenHashes, bSessions, bGroups,
		bGroupNames, bPermissions, bRepos, bRepoNames, bArtifacts, bArtifactPaths, bArtifactPkgs, bFormatKV}

	keyLastApplied = []byte("last_applied")
)

// Store is the bbolt-backed metadata store. Restore swaps the database
// file underneath, so every access goes through mu.
type Store struct {
	mu   sync.RWMutex
	db   *bolt.DB
	path string
}

// Open opens (or creates) the store at path.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, path: path}, nil
}

func openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
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
	return s.db.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) })
}

// LastApplied is the index of the last applied log entry.
func (s *Store) LastApplied() uint64 {
	var idx uint64
	_ = s.View(func(tx *Tx) error { idx = tx.lastApplied(); return nil })
	return idx
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

// ApplyBatch applies entries in one bbolt transaction. Entries at or below
// last_applied were applied before a restart and are skipped. A command
// that fails validation yields its error in the result and changes
// nothing; the batch goes on. An undecodable command panics: skipping it
// would fork this replica.
func (s *Store) ApplyBatch(entries []Entry) []Result {
	results := make([]Result, len(entries))
	s.mu.RLock()
	defer s.mu.RUnlock()
	err := s.db.Update(func(btx *bolt.Tx) error {
		tx := &Tx{tx: btx}
		last := tx.lastApplied()
		for i, e := range entries {
			if e.Index != 0 && e.Index <= last {
				continue
			}
			cmd, err := Decode(e.Data)
			if err != nil {
				panic(fmt.Sprintf("meta: log entry %d: %v", e.Index, err))
			}
			results[i].Err = tx.apply(cmd)
			if e.Index > last {
				last = e.Index
			}
		}
		return btx.Bucket(bSys).Put(keyLastApplied, u64(last))
	})
	if err != nil {
		// The disk failed under us; continuing would diverge from the log.
		panic(fmt.Sprintf("meta: apply batch: %v", err))
	}
	return results
}

// Apply applies one command at index (0 = no index, for tests and tools).
func (s *Store) Apply(index uint64, c Command) error {
	data, err := Encode(c)
	if err != nil {
		return err
	}
	return s.ApplyBatch([]Entry{{Index: index, Data: data}})[0].Err
}

// Snapshot is a point-in-time copy of the store being written out.
type Snapshot struct {
	tx     *bolt.Tx
	unlock func()
}

// BeginSnapshot pins the current state; writes may go on meanwhile.
func (s *Store) BeginSnapshot() (*Snapshot, error) {
	s.mu.RLock()
	tx, err := s.db.Begin(false)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	return &Snapshot{tx: tx, unlock: s.mu.RUnlock}, nil
}

// WriteTo streams the pinned state.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) { return sn.tx.WriteTo(w) }

// Release ends the snapshot; call it exactly once.
func (sn *Snapshot) Release() {
	_ = sn.tx.Rollback()
	sn.unlock()
}

// Restore replaces the whole store with a snapshot stream.
func (s *Store) Restore(r io.Reader) error {
	tmp := s.path + ".restore"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Validate before swapping: a bad snapshot must not destroy the store.
	check, err := openDB(tmp)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	check.Close()

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	db, err := openDB(s.path)
	if err != nil {
		return err
	}
	s.db = db
	return nil
}

// Tx is a transaction on the store; read methods are in query.go, apply
// methods in apply.go.
type Tx struct {
	tx *bolt.Tx
}

func (tx *Tx) lastApplied() uint64 {
	v := tx.tx.Bucket(bSys).Get(keyLastApplied)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// key joins parts with NUL, which no name or id contains.
func key(parts ...string) []byte {
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
	return b
}

func (tx *Tx) get(bucket []byte, k string, v any) error {
	raw := tx.tx.Bucket(bucket).Get([]byte(k))
	if raw == nil {
		return ErrNotFound
	}
	return json.Unmarshal(raw, v)
}

func (tx *Tx) put(bucket []byte, k string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.tx.Bucket(bucket).Put([]byte(k), raw)
}

func (tx *Tx) del(bucket []byte, k []byte) error { return tx.tx.Bucket(bucket).Delete(k) }

func (tx *Tx) index(bucket []byte, k []byte) string {
	return string(tx.tx.Bucket(bucket).Get(k))
}

// each decodes every value of a bucket in key order; fn returning errStop
// ends the walk early.
func each[T any](tx *Tx, bucket []byte, fn func(*T) error) error {
	return tx.tx.Bucket(bucket).ForEach(func(_, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		return fn(&v)
	})
}

var errStop = errors.New("stop")
