package meta

import (
	"errors"
	"testing"
	"time"
)

// TestRetentionRecords: a repository's rule is set and removed by its own
// command and checked there; the last download of each artifact only
// moves forward, goes with the artifact, and starts the tracking; a run
// is recorded.
func TestRetentionRecords(t *testing.T) {
	s := open(t)
	l := &testLog{t: t, s: s}
	apply, must := l.apply, l.must
	art := func(id, version string) Command {
		return &ArtifactPut{Artifact: Artifact{ID: id, RepositoryID: "r1", Path: "p/" + version + "/" + id, PackageName: "p", Version: version,
			Digest: "sha256:" + id, UploadedAt: t0}}
	}
	must(&RepoCreate{Repo: Repository{ID: "r1", Name: "one", Format: "generic", CreatedAt: t0}})
	must(art("a1", "1"))
	must(art("a2", "1"))
	must(art("a3", "2"))

	if err := apply(&RepoRetain{ID: "r1", Rule: &Retention{KeepLast: -1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a negative keep_last: %v", err)
	}
	must(&RepoRetain{ID: "r1", Rule: &Retention{KeepLast: 2, OlderThanDays: 30}, At: t0})
	var repo *Repository
	view := func(fn func(tx *Tx)) { _ = s.View(func(tx *Tx) error { fn(tx); return nil }) }
	view(func(tx *Tx) { repo, _ = tx.Repo("r1") })
	if repo.Retention == nil || *repo.Retention != (Retention{KeepLast: 2, OlderThanDays: 30}) || !repo.UpdatedAt.Equal(t0) {
		t.Errorf("the rule stored: %+v", repo.Retention)
	}
	must(&RepoUpdate{ID: "r1", Description: new("kept"), At: t0})
	view(func(tx *Tx) { repo, _ = tx.Repo("r1") })
	if repo.Retention == nil {
		t.Error("updating the repository dropped its rule")
	}

	if err := apply(&DownloadsSeen{Day: 20000, ArtifactIDs: make([]string, MaxSeenPerCommand+1)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an oversized record: %v", err)
	}
	must(&DownloadsSeen{Day: 20000, ArtifactIDs: []string{"a1", "nope"}})
	must(&DownloadsSeen{Day: 20002, ArtifactIDs: []string{"a2", "a3"}})
	must(&DownloadsSeen{Day: 19990, ArtifactIDs: []string{"a2"}}) // an older day does not go back
	var seen map[string]int64
	var st RetentionState
	view(func(tx *Tx) { seen, _ = tx.VersionsDownloaded("r1", "p"); st = tx.Retention() })
	if seen["1"] != 20002 || seen["2"] != 20002 || len(seen) != 2 {
		t.Errorf("versions downloaded: %v", seen)
	}
	if st.TrackedSince != 20000 {
		t.Errorf("tracked since %d, want the first day recorded", st.TrackedSince)
	}
	must(&ArtifactDelete{ID: "a3"})
	view(func(tx *Tx) { seen, _ = tx.VersionsDownloaded("r1", "p") })
	var left int64
	view(func(tx *Tx) { left = tx.LastDownloaded("a3") })
	if _, ok := seen["2"]; ok || left != 0 {
		t.Errorf("a deleted artifact's download is kept: %v %d", seen, left)
	}
	must(&RetentionRan{Run: &RetentionRun{StartedAt: t0, FinishedAt: t0.Add(time.Minute), By: "schedule", Versions: 3}, Day: 30000})
	view(func(tx *Tx) { st = tx.Retention() })
	if st.TrackedSince != 20000 || st.Last == nil || st.Last.Versions != 3 {
		t.Errorf("after a run: %+v", st)
	}
	must(&RepoRetain{ID: "r1", At: t0.Add(time.Hour)})
	view(func(tx *Tx) { repo, _ = tx.Repo("r1") })
	if repo.Retention != nil {
		t.Error("the rule was not removed")
	}
	must(&RepoDelete{ID: "r1"})
	view(func(tx *Tx) { left = tx.LastDownloaded("a1") })
	if left != 0 {
		t.Error("a deleted repository's downloads are kept")
	}
}
