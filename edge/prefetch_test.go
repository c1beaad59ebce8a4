package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/shared/meta"
)

// TestPrefetchSetting: --prefetch all fetches and pins the blobs of every
// assigned repository, a list those of the repositories it names, none
// nothing; a later pass fetches and pins a blob referenced since, keeping
// the pin of one no longer referenced, until the next whole pass.
func TestPrefetchSetting(t *testing.T) {
	bodies := map[string][]byte{}
	digestOf := func(b []byte) string {
		s := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(s[:])
		bodies[d] = b
		return d
	}
	one, two, three := digestOf([]byte("blob of one")), digestOf([]byte("blob of two")), digestOf([]byte("later in one"))
	for _, c := range []struct {
		setting string
		want    map[string]bool
		pinned  [3]int // after the first pass, the one after it, and a whole pass
	}{
		{"all", map[string]bool{one: true, two: true}, [3]int{2, 3, 2}},
		{"two", map[string]bool{two: true}, [3]int{1, 1, 1}},
		{"none", map[string]bool{}, [3]int{0, 0, 0}},
	} {
		t.Run(c.setting, func(t *testing.T) {
			replica, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer replica.Close()
			for _, cmd := range []meta.Command{
				&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "one", Format: "generic"}},
				&meta.RepoCreate{Repo: meta.Repository{ID: "r2", Name: "two", Format: "generic"}},
				&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", PackageName: "p", Version: "1", Digest: one}},
				&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a2", RepositoryID: "r2", Path: "p/1/f", PackageName: "p", Version: "1", Digest: two}},
			} {
				if err := replica.Apply(0, cmd); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range []string{"r1", "r2"} {
				if err := replica.SetFollowed(r, true); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			fetched := map[string]bool{}
			c2, err := cache.Open(t.TempDir(), 0, func(_ context.Context, d string, _ int64) (io.ReadCloser, error) {
				mu.Lock()
				fetched[d] = true
				mu.Unlock()
				return io.NopCloser(bytes.NewReader(bodies[d])), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			p := newPrefetcher(replica, c2, slog.New(slog.DiscardHandler), c.setting)
			p.pass(t.Context(), []string{"r1", "r2"})
			for _, d := range []string{one, two} {
				if c2.Has(d) != c.want[d] || fetched[d] != c.want[d] {
					t.Errorf("%s: cached %v, fetched %v, want %v", d, c2.Has(d), fetched[d], c.want[d])
				}
			}
			pinned := func(pass int) {
				t.Helper()
				if got := c2.Stats().Pinned; got != c.pinned[pass] {
					t.Errorf("after pass %d: %d blobs pinned, want %d", pass+1, got, c.pinned[pass])
				}
			}
			pinned(0)
			for _, cmd := range []meta.Command{
				&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a3", RepositoryID: "r1", Path: "p/2/f", PackageName: "p", Version: "2", Digest: three}},
				&meta.ArtifactDelete{ID: "a1"}, // one is no longer referenced
			} {
				if err := replica.Apply(0, cmd); err != nil {
					t.Fatal(err)
				}
			}
			p.pass(t.Context(), []string{"r1", "r2"})
			if want := c.setting == "all"; c2.Has(three) != want {
				t.Errorf("a blob of one referenced after the first pass: cached %v, want %v", c2.Has(three), want)
			}
			pinned(1)
			p.lastWhole = time.Time{} // as if prefetchWholeEvery had passed
			p.pass(t.Context(), []string{"r1", "r2"})
			pinned(2)
		})
	}
}
