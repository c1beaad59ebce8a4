package meta

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Blob referrers: which records keep a blob. Artifacts keep their own
// blob and their Refs, format keys their Blobs. Garbage collection deletes
// a blob only when nothing refers to it.

func refKey(digest string, k Kind, id string) string { return key(digest, strconv.Itoa(int(k)), id) }

// A reference keeps the log index that made it, and is listed again under
// that index (bRefOrder), so the blobs referenced since an index are
// found without a walk (ReferencedSince).

func (tx *Tx) ref(k Kind, id string, digests ...string) error {
	for _, d := range digests {
		if d == "" {
			continue
		}
		if err := tx.unref(k, id, d); err != nil { // listed once, under its last index
			return err
		}
		rk := []byte(refKey(d, k, id))
		if err := tx.bucket(bBlobRefs).Put(rk, u64(tx.idx)); err != nil {
			return err
		}
		if err := tx.bucket(bRefOrder).Put(append(u64(tx.idx), rk...), []byte{}); err != nil {
			return err
		}
	}
	return nil
}

// indexBlob is the Index of a kind whose record keeps one blob, the one
// digestOf names ("" none): the reference follows every write.
func indexBlob[T any](k Kind, digestOf func(*T) string) func(tx *Tx, id string, before, after []byte) error {
	return func(tx *Tx, id string, before, after []byte) error {
		o, n, err := decodePair[T](before, after)
		if err != nil {
			return err
		}
		if o != nil {
			if err := tx.unref(k, id, digestOf(o)); err != nil {
				return err
			}
		}
		if n != nil {
			return tx.ref(k, id, digestOf(n))
		}
		return nil
	}
}

func (tx *Tx) unref(k Kind, id string, digests ...string) error {
	for _, d := range digests {
		rk := []byte(refKey(d, k, id))
		v := tx.bucket(bBlobRefs).Get(rk)
		if v == nil {
			continue
		}
		// getU64 of a reference made before the order was kept is 0,
		// where buildRefOrder listed it.
		if err := tx.bucket(bRefOrder).Delete(append(u64(getU64(v)), rk...)); err != nil {
			return err
		}
		if err := tx.bucket(bBlobRefs).Delete(rk); err != nil {
			return err
		}
	}
	return nil
}

// buildRefOrder lists the references of a store written before their
// order was kept, under index 0.
func buildRefOrder(tx *Tx) error {
	var keys [][]byte
	err := tx.bucket(bBlobRefs).ForEach(func(k, v []byte) error {
		keys = append(keys, append(u64(getU64(v)), k...))
		return nil
	})
	if err != nil {
		return err
	}
	return putInOrder(tx.bucket(bRefOrder), keys)
}

// ReferencedSince lists the digests of the references made after log
// index after, in index order (a digest once per index), at most about
// limit of them without cutting one index's in two, and the index to go
// on after (after itself when there are no more).
func (tx *Tx) ReferencedSince(after uint64, limit int) (digests []string, next uint64) {
	next = after
	c := tx.bucket(bRefOrder).Cursor()
	for k, _ := c.Seek(u64(after + 1)); k != nil && len(k) > 8; k, _ = c.Next() {
		idx := getU64(k)
		if len(digests) >= limit && idx != next {
			break
		}
		d, _, _ := strings.Cut(string(k[8:]), "\x00")
		if idx != next || len(digests) == 0 || digests[len(digests)-1] != d {
			digests = append(digests, d)
		}
		next = idx
	}
	return digests, next
}

// Referenced reports whether any record keeps the blob.
func (tx *Tx) Referenced(digest string) bool {
	return len(tx.prefixKeysN(bBlobRefs, key(digest, ""), 1)) > 0
}

// BlobRepos lists, sorted and once each, the repositories whose records
// keep the blob (what an edge node may fetch: the blobs of its
// repositories).
func (tx *Tx) BlobRepos(digest string) []string {
	var out []string
	for _, rest := range tx.prefixKeys(bBlobRefs, key(digest, "")) {
		kind, id, ok := strings.Cut(rest, "\x00")
		n, err := strconv.Atoi(kind)
		if !ok || err != nil {
			continue
		}
		k := Kind(n)
		raw := tx.space(Space(k)).Get([]byte(id))
		if raw == nil {
			continue
		}
		if repo := kinds[k].repo(id, raw[8:]); repo != "" {
			out = append(out, repo)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RepoBlobs lists, sorted and once each, the blobs the records of a
// repository keep: its artifacts' blobs and refs and its format keys'
// blobs (what an edge node serving the repository pins).
func (tx *Tx) RepoBlobs(repoID string) ([]string, error) {
	var out []string
	_, ids := tx.under(SpaceArtifactPaths, key(repoID, ""))
	for _, id := range ids {
		a, err := tx.Artifact(id)
		if err != nil {
			return nil, err
		}
		out = append(out, a.Digest)
		out = append(out, a.Refs...)
	}
	_, values := tx.under(Space(KindKV), key(repoID, ""))
	for _, raw := range values {
		var rec kvRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return nil, err
		}
		out = append(out, rec.Blobs...)
	}
	slices.Sort(out)
	return slices.Compact(slices.DeleteFunc(out, func(d string) bool { return d == "" })), nil
}

// ReferencedBlobs pages through the digests some record keeps, in order:
// at most limit of them after the digest after ("" from the first), and
// the digest to go on after (none: "" at the end).
func (tx *Tx) ReferencedBlobs(after string, limit int) (digests []string, next string) {
	return tx.ReferencedBlobsBy(after, limit, nil)
}

// ReferencedBlobsBy is ReferencedBlobs counting only the references of
// the kinds by accepts (nil: all).
func (tx *Tx) ReferencedBlobsBy(after string, limit int, by func(Kind) bool) (digests []string, next string) {
	c := tx.bucket(bBlobRefs).Cursor()
	k, _ := c.First()
	if after != "" {
		k, _ = c.Seek([]byte(after + "\x01")) // past every key of after
	}
	for ; k != nil; k, _ = c.Next() {
		d, rest, _ := strings.Cut(string(k), "\x00")
		if n := len(digests); n > 0 && digests[n-1] == d {
			continue
		}
		if by != nil {
			kind, _, _ := strings.Cut(rest, "\x00")
			if n, err := strconv.Atoi(kind); err != nil || !by(Kind(n)) {
				continue
			}
		}
		if len(digests) == limit {
			return digests, digests[len(digests)-1]
		}
		digests = append(digests, d)
	}
	return digests, ""
}
