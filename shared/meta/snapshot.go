package meta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// Snapshots are streams of typed records, not database files: the records
// of every kind with their modify indexes, the tombstones the change feed
// still holds, and last an end frame with the applied index. Derived
// indexes are not written; restore rebuilds them through the same record
// code that commands use. The same stream, filtered, carries one
// repository's records to an edge.
//
// Layout: the magic, then a zstd stream of frames. A frame is a type byte
// and uvarint-prefixed fields:
//
//	'R' kind, index, key, body   a record
//	'T' kind, index, key, repo   a tombstone
//	'E' last applied, horizon    the end; a stream without it is refused

var snapMagic = []byte("DEPOTSNAP\x01")

const (
	frameRecord byte = 'R'
	frameTomb   byte = 'T'
	frameEnd    byte = 'E'
)

// Snapshot is a point-in-time view of the store being written out.
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

// Tx reads the pinned state.
func (sn *Snapshot) Tx() *Tx { return &Tx{tx: sn.tx} }

// Release ends the snapshot; call it exactly once.
func (sn *Snapshot) Release() {
	_ = sn.tx.Rollback()
	sn.unlock()
}

// WriteTo streams the whole pinned state.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) { return sn.Write(w, ChangeFilter{}) }

// Write streams the records of the pinned state that pass f.
func (sn *Snapshot) Write(w io.Writer, f ChangeFilter) (int64, error) {
	cw := &countWriter{w: w}
	if _, err := cw.Write(snapMagic); err != nil {
		return cw.n, err
	}
	zw, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return cw.n, err
	}
	bw := bufio.NewWriterSize(zw, 64<<10)
	tx := &Tx{tx: sn.tx}
	filtered := f.Repos != nil || f.NoGlobal || f.Kinds != nil
	for _, k := range Kinds() {
		if filtered && unfed[k] {
			continue // origin-only state, never in a filtered stream
		}
		err := tx.space(Space(k)).ForEach(func(id, v []byte) error {
			// The record's feed entry names its repository.
			if filtered && !f.pass(k, string(tx.bucket(bChanges).Get(changeKey(getU64(v), k, string(id)))[1:])) {
				return nil
			}
			return writeFrame(bw, frameRecord, []byte{byte(k)}, u64(getU64(v)), id, v[8:])
		})
		if err != nil {
			zw.Close()
			return cw.n, err
		}
	}
	err = tx.bucket(bTombOrder).ForEach(func(k, _ []byte) error {
		kind, id := Kind(k[8]), k[9:]
		ch := tx.bucket(bChanges).Get(k)
		if ch == nil || !f.pass(kind, string(ch[1:])) {
			return nil
		}
		return writeFrame(bw, frameTomb, []byte{byte(kind)}, k[:8], id, ch[1:])
	})
	if err == nil {
		err = writeFrame(bw, frameEnd, u64(tx.lastApplied()), u64(tx.Horizon()))
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	return cw.n, err
}

func writeFrame(w *bufio.Writer, typ byte, fields ...[]byte) error {
	if err := w.WriteByte(typ); err != nil {
		return err
	}
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))]); err != nil {
			return err
		}
		if _, err := w.Write(f); err != nil {
			return err
		}
	}
	return nil
}

// maxField bounds one field of a frame when reading: a record is far
// smaller; anything larger is a corrupt stream.
const maxField = 64 << 20

// frameShapes are the field sizes of each frame type (-1: any size).
var frameShapes = map[byte][]int{
	frameRecord: {1, 8, -1, -1},
	frameTomb:   {1, 8, -1, -1},
	frameEnd:    {8, 8},
}

// readFrame reads one frame and checks its shape.
func readFrame(r *bufio.Reader) (byte, [][]byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot ends without its end frame: %w", err)
	}
	shape, ok := frameShapes[typ]
	if !ok {
		return 0, nil, fmt.Errorf("unknown frame type %q", typ)
	}
	fields := make([][]byte, len(shape))
	for i, want := range shape {
		l, err := binary.ReadUvarint(r)
		if err != nil {
			return 0, nil, err
		}
		if l > maxField || (want >= 0 && l != uint64(want)) {
			return 0, nil, fmt.Errorf("malformed %q frame", typ)
		}
		fields[i] = make([]byte, l)
		if _, err := io.ReadFull(r, fields[i]); err != nil {
			return 0, nil, err
		}
	}
	return typ, fields, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// restoreBatch is how many records one transaction of a restore writes.
const restoreBatch = 20_000

// Restore replaces the whole store with a snapshot stream. The new state
// is built in a separate file and swapped in only when the stream was read
// to its end frame, so a bad snapshot leaves the store as it was.
func (s *Store) Restore(r io.Reader) error {
	tmp := s.path + ".restore"
	_ = os.Remove(tmp)
	db, err := openDB(tmp)
	if err != nil {
		return err
	}
	last, err := load(db, r)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("meta: restore: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if s.db, err = openDB(s.path); err != nil {
		return err
	}
	s.marks.published(s.marks.note(&touched{all: true})) // every memo decided before is stale
	s.setApplied(last)
	return nil
}

// load reads a snapshot stream into an empty database.
func load(db *bolt.DB, r io.Reader) (uint64, error) {
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil || !bytes.Equal(magic, snapMagic) {
		return 0, errors.New("not a Depot metadata snapshot")
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 64<<10)
	for {
		var last uint64
		done := false
		err := db.Update(func(btx *bolt.Tx) error {
			if err := markIndexed(btx); err != nil {
				return err
			}
			tx := &Tx{tx: btx}
			for n := 0; n < restoreBatch; n++ {
				typ, f, err := readFrame(br)
				if err != nil {
					return err
				}
				switch typ {
				case frameRecord:
					tx.idx = getU64(f[1])
					err = tx.putRaw(Kind(f[0][0]), string(f[2]), tx.idx, f[3])
				case frameTomb:
					err = tx.addTomb(getU64(f[1]), Kind(f[0][0]), string(f[2]), string(f[3]))
				case frameEnd:
					last, done = getU64(f[0]), true
					if getU64(f[1]) > 0 {
						err = btx.Bucket(bSys).Put(keyHorizon, f[1])
					}
					if err == nil {
						err = btx.Bucket(bSys).Put(keyLastApplied, f[0])
					}
					return err
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || done {
			return last, err
		}
	}
}
