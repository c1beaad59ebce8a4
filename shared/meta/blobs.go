package meta

import "strconv"

// Blob referrers: which records keep a blob. Artifacts keep their own
// blob and their Refs, format keys their Blobs. Garbage collection deletes
// a blob only when nothing refers to it.

func refKey(digest string, k Kind, id string) string { return key(digest, strconv.Itoa(int(k)), id) }

func (tx *Tx) ref(k Kind, id string, digests ...string) error {
	for _, d := range digests {
		if d == "" {
			continue
		}
		if err := tx.setKey(bBlobRefs, refKey(d, k, id)); err != nil {
			return err
		}
	}
	return nil
}

func (tx *Tx) unref(k Kind, id string, digests ...string) error {
	for _, d := range digests {
		if err := tx.delKey(bBlobRefs, refKey(d, k, id)); err != nil {
			return err
		}
	}
	return nil
}

// Referenced reports whether any record keeps the blob.
func (tx *Tx) Referenced(digest string) bool {
	return len(tx.prefixKeysN(bBlobRefs, key(digest, ""), 1)) > 0
}
