package retention

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// fixture is a store with one generic repository and a service whose
// clock and default rule the test sets.
type fixture struct {
	t       *testing.T
	env     *formattest.Env
	svc     *Service
	repo    *meta.Repository
	mu      sync.Mutex
	now     time.Time
	rule    meta.Retention
	every   time.Duration
	deletes int
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, env: formattest.New(t), now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	f.repo = f.env.Repo("files", "generic")
	f.svc = New(Config{Store: f.env.Store, Commit: f.env, Now: f.clock,
		Default: func() (meta.Retention, time.Duration) { f.mu.Lock(); defer f.mu.Unlock(); return f.rule, f.every },
		Delete: func(ctx context.Context, repo *meta.Repository, a *meta.Artifact) error {
			f.deletes++
			_, err := f.env.Apply(ctx, &meta.ArtifactDelete{ID: a.ID, RepoID: repo.ID})
			return err
		}})
	return f
}

func (f *fixture) clock() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *fixture) advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

func (f *fixture) must(c meta.Command) {
	f.t.Helper()
	if _, err := f.env.Apply(context.Background(), c); err != nil {
		f.t.Fatalf("%T: %v", c, err)
	}
}

// upload stores version v of pkg (files files) at the fixture's time.
func (f *fixture) upload(pkg, v string, files int) []string {
	var ids []string
	for i := range files {
		id := fmt.Sprintf("%s-%s-%d", pkg, v, i)
		f.must(&meta.ArtifactPut{Artifact: meta.Artifact{ID: id, RepositoryID: f.repo.ID, Path: fmt.Sprintf("%s/%s/f%d", pkg, v, i),
			PackageName: pkg, Version: v, Digest: "sha256:" + id, SizeBytes: 10, UploadedAt: f.clock()}})
		ids = append(ids, id)
	}
	return ids
}

func (f *fixture) apply(dry bool) Report {
	f.t.Helper()
	rep, err := f.svc.Apply(context.Background(), dry, "test")
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func names(rep Report) []string {
	var out []string
	for _, v := range rep.Deleted {
		out = append(out, v.Package+"@"+v.Version)
	}
	slices.Sort(out)
	return out
}

// TestConditions: each condition set must let a version go; the newest
// version always stays; versions uploaded before downloads were tracked
// count as downloaded then; a run deletes every file of a version and
// records itself, a dry run nothing.
func TestConditions(t *testing.T) {
	f := newFixture(t)
	day := 24 * time.Hour
	for i := 1; i <= 6; i++ {
		files := 1
		if i == 2 {
			files = 3
		}
		f.upload("app", fmt.Sprint(i), files)
		f.advance(10 * day)
	}
	f.upload("solo", "1", 1)
	// Now: app 1 is 60 days old, 6 is 10 days old.

	f.rule = meta.Retention{KeepDownloadedDays: 5} // protects only: nothing goes
	if rep := f.apply(true); rep.Repositories != 0 || len(rep.Deleted) != 0 {
		t.Fatalf("a rule that only keeps: %+v", rep)
	}
	f.rule = meta.Retention{KeepLast: 2}
	if got := names(f.apply(true)); !slices.Equal(got, []string{"app@1", "app@2", "app@3", "app@4"}) {
		t.Errorf("keep the last 2: %v", got)
	}
	f.rule = meta.Retention{KeepLast: 2, OlderThanDays: 35}
	if got := names(f.apply(true)); !slices.Equal(got, []string{"app@1", "app@2", "app@3"}) {
		t.Errorf("and older than 35 days: %v", got)
	}
	f.rule = meta.Retention{OlderThanDays: 1}
	if got := names(f.apply(true)); !slices.Equal(got, []string{"app@1", "app@2", "app@3", "app@4", "app@5"}) {
		t.Errorf("older than a day (the newest stays): %v", got)
	}

	// Downloads: none recorded yet, so none is known to be unused.
	f.rule = meta.Retention{OlderThanDays: 1, KeepDownloadedDays: 30}
	if got := names(f.apply(true)); len(got) != 0 {
		t.Errorf("before any download was recorded: %v", got)
	}
	today := meta.UnixDay(f.clock())
	f.must(&meta.DownloadsSeen{Day: today, ArtifactIDs: []string{"app-3-0"}})
	if got := names(f.apply(true)); len(got) != 0 {
		t.Errorf("uploaded before tracking began: %v", got)
	}
	f.advance(31 * day)
	f.must(&meta.DownloadsSeen{Day: meta.UnixDay(f.clock()) - 3, ArtifactIDs: []string{"app-2-1"}}) // one file of version 2
	rep := f.apply(true)
	if got := names(rep); !slices.Equal(got, []string{"app@1", "app@3", "app@4", "app@5"}) {
		t.Errorf("downloaded within 30 days: %v", got)
	}
	if i := slices.IndexFunc(rep.Deleted, func(v Version) bool { return v.Version == "3" }); i < 0 || rep.Deleted[i].LastDownloaded == nil {
		t.Errorf("the report does not say when 3 was downloaded: %+v", rep.Deleted)
	}
	if f.deletes != 0 {
		t.Fatalf("dry runs deleted %d files", f.deletes)
	}

	f.rule = meta.Retention{KeepLast: 3}
	rep = f.apply(false)
	if got := names(rep); !slices.Equal(got, []string{"app@1", "app@2", "app@3"}) || rep.Files != 5 || rep.Bytes != 50 || f.deletes != 5 {
		t.Fatalf("the run: %v, %d files, %d bytes, %d deletes", got, rep.Files, rep.Bytes, f.deletes)
	}
	var left []meta.VersionSummary
	var st meta.RetentionState
	_ = f.env.Store.View(func(tx *meta.Tx) error { left, _ = tx.Versions(f.repo.ID, "app"); st = tx.Retention(); return nil })
	if len(left) != 3 || st.Last == nil || st.Last.Versions != 3 || st.Last.By != "test" {
		t.Errorf("after the run: %d versions left, last run %+v", len(left), st.Last)
	}

	// A repository's own rule wins over the default; keep-everything opts out.
	f.must(&meta.RepoRetain{ID: f.repo.ID, Rule: &meta.Retention{}})
	if rep := f.apply(true); rep.Repositories != 0 {
		t.Errorf("an opted-out repository was examined: %+v", rep)
	}
}

// TestSchedule: the leader applies the rules an interval after it first
// found one, then when the interval has passed since the last run that
// deleted, whichever origin made it, and not at all with no interval.
func TestSchedule(t *testing.T) {
	f := newFixture(t)
	f.upload("app", "1", 1)
	f.advance(time.Hour)
	f.upload("app", "2", 1)
	f.rule, f.every = meta.Retention{KeepLast: 1}, 0
	f.svc.due(context.Background())
	if f.deletes != 0 {
		t.Fatal("a run without an interval")
	}
	f.every = 24 * time.Hour
	f.svc.due(context.Background()) // the schedule starts: a day to preview
	f.advance(23 * time.Hour)
	f.svc.due(context.Background())
	if f.deletes != 0 {
		t.Fatal("a run within the first interval")
	}
	f.advance(time.Hour)
	f.svc.due(context.Background())
	if f.deletes != 1 {
		t.Fatalf("the first due run deleted %d", f.deletes)
	}
	f.advance(time.Hour)
	f.upload("app", "3", 1)
	f.svc.due(context.Background())
	if f.deletes != 1 {
		t.Fatal("a run within the interval")
	}
	f.advance(24 * time.Hour)
	f.svc.due(context.Background())
	if f.deletes != 2 {
		t.Fatalf("after the interval: %d deletes", f.deletes)
	}
}
