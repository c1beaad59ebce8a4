package meta

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestScanRecords: scans are queued once per artifact, taken from the
// queue in order, moved on only from the status read, emit scan.completed
// with their severities, keep ScansKept per artifact, are listed by
// filter, and go with their artifact; the advisory database changes only
// from the one read.
func TestScanRecords(t *testing.T) {
	s := open(t)
	l := &testLog{t: t, s: s}
	l.must(&RepoCreate{Repo: Repository{ID: "r1", Name: "js", Format: "npm", CreatedAt: t0}})
	l.must(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "p/-/p-1.tgz", PackageName: "p", Version: "1", Digest: "sha256:a1", UploadedAt: t0}})
	l.must(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "q/-/q-1.tgz", PackageName: "q", Version: "1", Digest: "sha256:a2", UploadedAt: t0}})

	if err := l.apply(&AdvisoriesSet{DB: AdvisoryDB{Digest: "sha256:db1"}, Was: "sha256:other"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a load over a database it did not read: %v", err)
	}
	l.must(&AdvisoriesSet{DB: AdvisoryDB{Digest: "sha256:db1", Advisories: 3}})
	if err := l.apply(&AdvisoriesSet{DB: AdvisoryDB{Digest: "sha256:db2"}}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second load from none: %v", err)
	}

	queued := func(id, art string, at time.Time) Scan {
		return Scan{ID: id, ArtifactID: art, Scanner: "osv", Status: ScanQueued, Trigger: "request", CreatedAt: at}
	}
	l.must(&ScansRequest{Scans: []Scan{queued("s1", "a1", t0), queued("s2", "a2", t0.Add(time.Second))}})
	if err := l.apply(&ScansRequest{Scans: []Scan{queued("s3", "a1", t0)}}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second queued scan of a1: %v", err)
	}
	if err := l.apply(&ScansRequest{Scans: []Scan{queued("s4", "gone", t0)}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a scan of nothing: %v", err)
	}
	var q []Scan
	_ = s.View(func(tx *Tx) error { q = tx.ScanQueue(10); return nil })
	if len(q) != 2 || q[0].ID != "s1" || q[0].RepositoryID != "r1" || q[0].PackageName != "p" {
		t.Fatalf("queue: %+v", q)
	}
	run := q[0]
	run.Status = ScanRunning
	l.must(&ScanUpdate{Scan: run, Was: ScanQueued})
	if err := l.apply(&ScanUpdate{Scan: run, Was: ScanQueued}); !errors.Is(err, ErrConflict) {
		t.Errorf("taken twice: %v", err)
	}
	done := run
	done.Status, done.Vulnerabilities, done.ReportURL = ScanCompleted, Vulnerabilities{Critical: 1, Low: 2}, "http://x/api/v1/security/scans/s1"
	l.must(&ScanUpdate{Scan: done, Was: ScanRunning})
	var all, evs []LoggedEvent
	_ = s.View(func(tx *Tx) error { all, _ = tx.Events("", 100); return nil })
	for _, e := range all {
		if e.Name == EventScanCompleted {
			evs = append(evs, e)
		}
	}
	if len(evs) != 1 || len(evs[0].Severity) != 2 || evs[0].Severity[0] != "critical" || evs[0].RepositoryID != "r1" {
		t.Fatalf("events: %+v", evs)
	}

	// Later scans of a1: only the last ScansKept stay.
	for i := range ScansKept + 2 {
		id := fmt.Sprintf("later%d", i)
		l.must(&ScansRequest{Scans: []Scan{queued(id, "a1", t0.Add(time.Duration(i+2)*time.Minute))}})
		sc := queued(id, "a1", t0.Add(time.Duration(i+2)*time.Minute))
		sc.RepositoryID, sc.Status = "r1", ScanFailed
		l.must(&ScanUpdate{Scan: sc, Was: ScanQueued})
	}
	var of []Scan
	var page []Scan
	var total int
	_ = s.View(func(tx *Tx) error {
		of = tx.ScansOf("a1")
		page, total = tx.Scans(ScanFilter{RepositoryID: "r1", Status: ScanFailed, Offset: 1, Limit: 2})
		return nil
	})
	if len(of) != ScansKept || of[0].ID != fmt.Sprintf("later%d", ScansKept+1) {
		t.Errorf("kept %d scans of a1, newest %s", len(of), of[0].ID)
	}
	if total != ScansKept || len(page) != 2 || page[0].ID != fmt.Sprintf("later%d", ScansKept) {
		t.Errorf("failed scans of r1: %d, page %+v", total, page)
	}
	l.must(&ArtifactDelete{ID: "a1"})
	_ = s.View(func(tx *Tx) error { of = tx.ScansOf("a1"); page, total = tx.Scans(ScanFilter{}); return nil })
	if len(of) != 0 || total != 1 || page[0].ID != "s2" {
		t.Errorf("after a1 went: %d of its scans, %d in all", len(of), total)
	}
}
