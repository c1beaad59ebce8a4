package meta

import (
	"bytes"
	"encoding/json"
)

// The change feed. Every record has one entry in the changes bucket, under
// the index at which it last changed; writing the record again moves the
// entry, deleting it turns the entry into a tombstone. Reading the feed
// from an index is therefore a cursor walk, and reading it from 0 lists
// every live record: the same call serves a follower catching up and one
// starting from nothing. Tombstones are kept for TombstoneRetention
// indexes; a reader further behind than that must resync.

// Change is one record that changed after some index: its current value,
// or its deletion.
type Change struct {
	Index   uint64          `json:"index"`
	Kind    Kind            `json:"kind"`
	Key     string          `json:"key"`
	Repo    string          `json:"repo,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
}

// ChangeFilter narrows a change feed. The zero filter passes everything.
type ChangeFilter struct {
	// Repos passes the records of the repositories it accepts; nil passes
	// every repository.
	Repos func(id string) bool
	// NoGlobal drops records that belong to no repository (users, tokens,
	// sessions, groups).
	NoGlobal bool
	// Kinds passes only these kinds; nil passes all.
	Kinds []Kind
	// Global, when set, is asked about each live record that belongs to
	// no repository, value included: false leaves it out. A deletion
	// carries no value and is not asked about.
	Global func(c *Change) (bool, error)
}

func (f *ChangeFilter) pass(k Kind, repo string) bool {
	if f.Kinds != nil {
		found := false
		for _, x := range f.Kinds {
			found = found || x == k
		}
		if !found {
			return false
		}
	}
	if repo == "" {
		return !f.NoGlobal
	}
	return f.Repos == nil || f.Repos(repo)
}

const (
	flagLive    byte = 0
	flagDeleted byte = 1
)

var keyHorizon = []byte("feed_horizon")

func changeKey(idx uint64, k Kind, id string) []byte {
	b := make([]byte, 0, 9+len(id))
	b = append(b, u64(idx)...)
	b = append(b, byte(k))
	return append(b, id...)
}

func tombKey(k Kind, id string) []byte { return append([]byte{byte(k)}, id...) }

func (tx *Tx) addChange(idx uint64, k Kind, id, repo string, deleted bool) error {
	flag := flagLive
	if deleted {
		flag = flagDeleted
	}
	return tx.bucket(bChanges).Put(changeKey(idx, k, id), append([]byte{flag}, repo...))
}

func (tx *Tx) dropChange(idx uint64, k Kind, id string) error {
	return tx.bucket(bChanges).Delete(changeKey(idx, k, id))
}

func (tx *Tx) addTomb(idx uint64, k Kind, id, repo string) error {
	if err := tx.bucket(bTombs).Put(tombKey(k, id), u64(idx)); err != nil {
		return err
	}
	if err := tx.bucket(bTombOrder).Put(changeKey(idx, k, id), []byte{}); err != nil {
		return err
	}
	return tx.addChange(idx, k, id, repo, true)
}

// dropTomb forgets the deletion of a record that is being created again.
func (tx *Tx) dropTomb(k Kind, id string) error {
	v := tx.bucket(bTombs).Get(tombKey(k, id))
	if v == nil {
		return nil
	}
	idx := getU64(v)
	if err := tx.bucket(bTombs).Delete(tombKey(k, id)); err != nil {
		return err
	}
	if err := tx.bucket(bTombOrder).Delete(changeKey(idx, k, id)); err != nil {
		return err
	}
	return tx.dropChange(idx, k, id)
}

// Horizon is the index up to which deletions have been forgotten: a feed
// reader that has applied less than this (and more than 0) must resync.
func (tx *Tx) Horizon() uint64 { return getU64(tx.bucket(bSys).Get(keyHorizon)) }

// compact forgets tombstones at or below upTo; the horizon moves to the
// last one forgotten, so readers that missed none keep reading.
func (tx *Tx) compact(upTo uint64) error {
	cur := tx.bucket(bTombOrder).Cursor()
	var drop [][]byte
	for k, _ := cur.First(); k != nil && getU64(k) <= upTo; k, _ = cur.Next() {
		drop = append(drop, bytes.Clone(k))
	}
	if len(drop) == 0 {
		return nil
	}
	for _, k := range drop {
		for _, err := range []error{
			tx.bucket(bTombOrder).Delete(k),
			tx.bucket(bChanges).Delete(k),
			tx.bucket(bTombs).Delete(k[8:]),
		} {
			if err != nil {
				return err
			}
		}
	}
	return tx.bucket(bSys).Put(keyHorizon, drop[len(drop)-1][:8])
}

// Current is the record k/key as a change: its value and the index it
// last changed at.
func (tx *Tx) Current(k Kind, key string) (Change, bool) {
	info, ok := kinds[k]
	if !ok || unfed[k] {
		return Change{}, false
	}
	raw := tx.space(Space(k)).Get([]byte(key))
	if raw == nil {
		return Change{}, false
	}
	return Change{Index: getU64(raw), Kind: k, Key: key, Repo: info.repo(key, raw[8:]), Value: bytes.Clone(raw[8:])}, true
}

// Applied is the last index the store has applied.
func (tx *Tx) Applied() uint64 { return tx.lastApplied() }

// Changes lists the records that changed after index since and pass f, in
// index order, with their current values (tombstones for deletions). It
// stops after about limit changes (0 = no limit), never inside one index,
// and returns the index to ask from next: the last index returned, or the
// store's last applied index when the walk reached the end. since == 0
// lists every live record; a since below the horizon is ErrCompacted.
func (tx *Tx) Changes(since uint64, f ChangeFilter, limit int) ([]Change, uint64, error) {
	if since > 0 && since < tx.Horizon() {
		return nil, 0, ErrCompacted
	}
	var out []Change
	cur := tx.bucket(bChanges).Cursor()
	var lastIdx uint64
	for k, v := cur.Seek(u64(since + 1)); k != nil; k, v = cur.Next() {
		idx := getU64(k)
		if limit > 0 && len(out) >= limit && idx != lastIdx {
			return out, lastIdx, nil
		}
		lastIdx = idx
		kind, id, repo := Kind(k[8]), string(k[9:]), string(v[1:])
		if !f.pass(kind, repo) {
			continue
		}
		c := Change{Index: idx, Kind: kind, Key: id, Repo: repo, Deleted: v[0] == flagDeleted}
		if !c.Deleted {
			raw := tx.space(Space(kind)).Get([]byte(id))
			if raw == nil {
				continue // cannot happen: the entry moves with the record
			}
			c.Value = bytes.Clone(raw[8:])
			if repo == "" && f.Global != nil {
				if ok, err := f.Global(&c); err != nil || !ok {
					if err != nil {
						return nil, 0, err
					}
					continue
				}
			}
		}
		if since == 0 && c.Deleted {
			continue // a reader starting from nothing has nothing to delete
		}
		out = append(out, c)
	}
	return out, tx.lastApplied(), nil
}
