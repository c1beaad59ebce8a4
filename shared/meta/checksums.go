package meta

import (
	"bytes"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
)

// Artifacts are indexed by their checksums, so a search by checksum
// (exact) reads the matching artifacts alone.

var bChecksums = []byte("artifact_checksums") // algorithm:hex \0 artifact id -> ""

// checksumKeys are the index keys of an artifact's checksums.
func checksumKeys(id string, c blob.Checksums) [][]byte {
	var out [][]byte
	for _, s := range []struct{ algo, hex string }{{"md5", c.MD5}, {"sha1", c.SHA1}, {"sha256", c.SHA256}, {"sha512", c.SHA512}} {
		if s.hex != "" {
			out = append(out, []byte(s.algo+":"+strings.ToLower(s.hex)+"\x00"+id))
		}
	}
	return out
}

// indexChecksums moves an artifact's entries from its old checksums (o,
// nil: none) to its new ones (n, nil: none).
func (tx *Tx) indexChecksums(id string, o, n *Artifact) error {
	b := tx.bucket(bChecksums)
	if o != nil {
		for _, k := range checksumKeys(id, o.Checksums) {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	if n != nil {
		for _, k := range checksumKeys(id, n.Checksums) {
			if err := b.Put(k, []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildChecksums fills the index from the artifacts.
func buildChecksums(tx *Tx) error {
	return tx.space(Space(KindArtifact)).ForEach(func(k, v []byte) error {
		_, a, err := decodePair[Artifact](nil, v[8:])
		if err != nil {
			return err
		}
		return tx.indexChecksums(string(k), nil, a)
	})
}

// ArtifactsByChecksum lists the ids of the artifacts whose algorithm
// (md5, sha1, sha256, sha512) checksum is hex, at most limit.
func (tx *Tx) ArtifactsByChecksum(algorithm, hex string, limit int) []string {
	var out []string
	p := []byte(algorithm + ":" + strings.ToLower(hex) + "\x00")
	cur := tx.bucket(bChecksums).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, _ = cur.Next() {
		out = append(out, string(k[len(p):]))
	}
	return out
}
