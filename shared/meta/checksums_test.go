package meta

import (
	"slices"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

// TestArtifactsByChecksum: an artifact is found by each of its checksums,
// whatever their case, and no longer once deleted; two artifacts of the
// same bytes are both found.
func TestArtifactsByChecksum(t *testing.T) {
	s := open(t)
	sums := blob.Checksums{MD5: "0cc175b9c0f1b6a831c399e269772661", SHA1: "86F7E437FAA5A7FCE15D1DDCB9EAEAEA377667B8",
		SHA256: "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}
	for _, c := range []Command{
		&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}},
		&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/a", PackageName: "p", Version: "1", Digest: "sha256:ca97", Checksums: sums}},
		&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "p/2/a", PackageName: "p", Version: "2", Digest: "sha256:ca97", Checksums: sums}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	find := func(algo, hex string) []string {
		var ids []string
		_ = s.View(func(tx *Tx) error { ids = tx.ArtifactsByChecksum(algo, hex, 10); return nil })
		return ids
	}
	for algo, hex := range map[string]string{"md5": sums.MD5, "sha1": "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8", "sha256": "CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB"} {
		if got := find(algo, hex); !slices.Equal(got, []string{"a1", "a2"}) {
			t.Errorf("%s %s: %v", algo, hex, got)
		}
	}
	if got := find("sha1", sums.MD5); len(got) != 0 {
		t.Errorf("an md5 as a sha1: %v", got)
	}
	if err := s.Apply(0, &ArtifactDelete{ID: "a1", RepoID: "r1", At: t0}); err != nil {
		t.Fatal(err)
	}
	if got := find("md5", sums.MD5); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("after a delete: %v", got)
	}
}
