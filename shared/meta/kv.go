package meta

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The format key kind (a format's own state in a repository) and its
// command.
const (
	KindKV     Kind    = 8
	CmdKVApply CmdType = 18
)

func init() {
	declareKind(KindKV, kindDecl{Name: "format keys", Bucket: "format_kv", Repo: kvRepo, Index: indexKV})
	declareCommand(CmdKVApply, func() Command { return new(KVApply) })
}

// The format keyspace: the state a format keeps beside its artifacts
// (tags, dist-tags, blob links...), one record per key under
// repository \0 key.

// KVOp sets (Value non-empty) or deletes (Value empty) one key of a
// repository's format keyspace. Blobs are digests the key keeps from
// garbage collection for as long as it exists (an OCI blob link).
type KVOp struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
	Blobs []string        `json:"blobs,omitempty"`
}

// KVPair is one entry of a repository's format keyspace.
type KVPair struct {
	Key   string
	Value json.RawMessage
}

// kvRecord is the stored form of a key.
type kvRecord struct {
	Value json.RawMessage `json:"v"`
	Blobs []string        `json:"b,omitempty"`
}

// kvValue reads the value of a stored key. The record is json.Marshal's
// rendering of a kvRecord, so one without a blobs field is exactly
// {"v":<value>}: its value is taken as it is, without a decode (a key is
// read per package by searches and listings). Anything else is decoded.
func kvValue(raw []byte) (json.RawMessage, bool) {
	const head = `{"v":`
	if len(raw) > len(head)+1 && string(raw[:len(head)]) == head && raw[len(raw)-1] == '}' &&
		!bytes.Contains(raw, []byte(`,"b":`)) {
		// A copy: raw is the database's memory, valid only in the
		// transaction, and callers keep values beyond it.
		return bytes.Clone(raw[len(head) : len(raw)-1]), true
	}
	var rec kvRecord
	if json.Unmarshal(raw, &rec) != nil {
		return nil, false
	}
	return rec.Value, true
}

// KVApply changes a repository's format keyspace.
type KVApply struct {
	RepoID string `json:"repo_id"`
	Ops    []KVOp `json:"ops"`
}

func (*KVApply) Type() CmdType   { return CmdKVApply }
func (c *KVApply) Scope() string { return c.RepoID }

func (c *KVApply) apply(tx *Tx) error {
	if _, err := tx.Repo(c.RepoID); err != nil {
		return err
	}
	return tx.kvApply(c.RepoID, c.Ops)
}

// kvApply sets or deletes keys of a repository's format keyspace.
// Deleting an absent key is not an error.
func (tx *Tx) kvApply(repoID string, ops []KVOp) error {
	for _, op := range ops {
		if op.Key == "" || strings.ContainsRune(op.Key, 0) {
			return Invalidf("empty or malformed kv key")
		}
		k := key(repoID, op.Key)
		if len(op.Value) == 0 {
			if !tx.exists(KindKV, k) {
				continue
			}
			if err := tx.delRec(KindKV, k); err != nil {
				return err
			}
			continue
		}
		if !json.Valid(op.Value) {
			return Invalidf("kv %s: value is not JSON", op.Key)
		}
		if err := tx.putRec(KindKV, k, kvRecord{Value: op.Value, Blobs: op.Blobs}); err != nil {
			return err
		}
	}
	return nil
}

func kvRepo(k string, _ []byte) string {
	repo, _, _ := strings.Cut(k, "\x00")
	return repo
}

func indexKV(tx *Tx, k string, before, after []byte) error {
	o, n, err := decodePair[kvRecord](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.unref(KindKV, k, o.Blobs...); err != nil {
			return err
		}
	}
	if n != nil {
		return tx.ref(KindKV, k, n.Blobs...)
	}
	return nil
}

// KV reads one key of a repository's format keyspace.
func (tx *Tx) KV(repoID, k string) (json.RawMessage, bool) {
	raw, _ := tx.lookup(Space(KindKV), key(repoID, k))
	if raw == nil {
		return nil, false
	}
	return kvValue(raw)
}

// KVList lists the keys of a repository's format keyspace under prefix,
// in key order.
func (tx *Tx) KVList(repoID, prefix string) []KVPair {
	var out []KVPair
	strip := len(key(repoID, ""))
	_ = tx.scan(Space(KindKV), key(repoID, prefix), func(k string, raw []byte) error {
		if v, ok := kvValue(raw); ok {
			out = append(out, KVPair{Key: k[strip:], Value: v})
		}
		return nil
	})
	return out
}

// KVKeys visits the keys of a repository's format keyspace under prefix,
// in key order, without decoding their values, until fn returns false. A
// tracked transaction remembers the range, as KVList does.
func (tx *Tx) KVKeys(repoID, prefix string, fn func(key string) bool) {
	strip := len(key(repoID, ""))
	_ = tx.scan(Space(KindKV), key(repoID, prefix), func(k string, _ []byte) error {
		if !fn(k[strip:]) {
			return errStop
		}
		return nil
	})
}
