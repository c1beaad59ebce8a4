// Package retention applies the repositories' retention rules
// (meta.Retention): it finds the versions a rule lets go and deletes each
// through its format's own delete, so that what a client sees stays
// consistent (an npm packument, maven-metadata.xml, OCI tags), every
// deleted version raises its artifact.deleted event and edges drop it as
// they drop any delete. The blobs are freed by the garbage collection
// that follows (POST /admin/cleanup runs both; on schedule the
// collection's own interval does).
//
// A run walks the repositories that have a rule that deletes, their
// packages in name order, a page at a time in short read views, and
// deletes at most MaxPerRun versions (the rest go on the next run). A dry
// run reports the same without deleting.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/metrics"
	"github.com/depot-registry/depot/shared/progress"
)

// Bounds of a run.
const (
	// MaxPerRun is how many versions one run deletes at most.
	MaxPerRun = 10_000
	// MaxListed is how many versions a report lists (it counts them all).
	MaxListed = 1000
	// maxErrors is how many failures a report describes.
	maxErrors = 20
	// page is how many packages are read in one view.
	page = 200
)

// ErrRunning is returned by Run while another run goes on here.
var ErrRunning = errors.New("the retention rules are being applied already")

// Config of a Service.
type Config struct {
	Store  *meta.Store
	Commit meta.Committer
	// Formats by repository format: their Pinner, if any, says what is
	// never deleted.
	Formats map[string]format.Format
	// Delete deletes an artifact as its format does (with the files
	// that go with it), acting as the retention job.
	Delete func(ctx context.Context, repo *meta.Repository, a *meta.Artifact) error
	// Default is the rule of repositories without one of their own, and
	// Every how often the leader applies the rules (0: only when asked).
	Default func() (rule meta.Retention, every time.Duration)
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *metrics.Retention // nil: none
}

// Service applies the rules: on schedule while this origin leads (Run),
// or when an administrator asks (Apply).
type Service struct {
	cfg      Config
	running  sync.Mutex
	progress *progress.Tracker
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, progress: progress.New("retention", cfg.Log)}
}

// Status is the progress of the run going on, or of the last one
// (repositories done of those with a rule).
func (s *Service) Status() progress.Status { return s.progress.Status() }

// Report is what a run deleted, or a dry run would delete.
type Report struct {
	DryRun     bool      `json:"dry_run"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// Repositories are those with a rule that deletes; Packages and
	// VersionsExamined what was read of them.
	Repositories     int `json:"repositories"`
	Packages         int `json:"packages_examined"`
	VersionsExamined int `json:"versions_examined"`
	// Versions, Files and Bytes are what was deleted (would be).
	Versions int   `json:"versions"`
	Files    int   `json:"files"`
	Bytes    int64 `json:"bytes"`
	Failed   int   `json:"failed"`
	// Deleted lists the first MaxListed versions; Truncated: more were.
	Deleted   []Version `json:"deleted"`
	Truncated bool      `json:"truncated"`
	// Limited: the run stopped at MaxPerRun versions; the next goes on.
	Limited bool     `json:"limited"`
	Errors  []string `json:"errors,omitempty"`
}

// Version is one version a run deleted (would delete).
type Version struct {
	RepositoryID string    `json:"repository_id"`
	Repository   string    `json:"repository"`
	Package      string    `json:"package"`
	Version      string    `json:"version"`
	UploadedAt   time.Time `json:"uploaded_at"`
	// LastDownloaded is the day it was last downloaded, when recorded.
	LastDownloaded *time.Time `json:"last_downloaded,omitempty"`
	Files          int        `json:"files"`
	SizeBytes      int64      `json:"size_bytes"`
	// Rule is the rule that let it go ("repository" or "default", and
	// the rule in words).
	Rule string `json:"rule"`
}

// Apply runs the rules once (dryRun: deleting nothing), for by (an
// administrator's name, or "schedule"), and records a run that deleted.
func (s *Service) Apply(ctx context.Context, dryRun bool, by string) (Report, error) {
	if !s.running.TryLock() {
		return Report{}, ErrRunning
	}
	defer s.running.Unlock()
	start, began := s.cfg.Now().UTC(), time.Now()
	rep := Report{DryRun: dryRun, StartedAt: start, Deleted: []Version{}}
	err := s.run(ctx, &rep)
	rep.DurationMS = time.Since(began).Milliseconds()
	s.observe(ctx, rep, by, err)
	return rep, err
}

// repoRule is a repository and the rule that applies to it.
type repoRule struct {
	repo  meta.Repository
	rule  meta.Retention
	named string
}

// rules lists the repositories with a rule that deletes.
func (s *Service) rules(tx *meta.Tx) ([]repoRule, error) {
	def, _ := s.cfg.Default()
	var todo []repoRule
	repos, err := tx.Repos()
	for _, r := range repos {
		rr := repoRule{repo: r, rule: def, named: "default"}
		if r.Retention != nil {
			rr.rule, rr.named = *r.Retention, "repository"
		}
		if rr.rule.Deletes() {
			todo = append(todo, rr)
		}
	}
	return todo, err
}

func (s *Service) run(ctx context.Context, rep *Report) error {
	var todo []repoRule
	var tracked int64
	err := s.cfg.Store.View(func(tx *meta.Tx) error {
		var err error
		todo, err = s.rules(tx)
		tracked = tx.Retention().TrackedSince
		return err
	})
	if err != nil {
		return err
	}
	rep.Repositories = len(todo)
	s.progress.Start(int64(len(todo)))
	defer s.progress.End()
	for _, rr := range todo {
		if err := s.repo(ctx, rr, tracked, rep); err != nil {
			return err
		}
		s.progress.Add(1, 0, 0)
		if rep.Limited {
			break
		}
	}
	return nil
}

// repo applies one repository's rule, a page of packages at a time.
func (s *Service) repo(ctx context.Context, rr repoRule, tracked int64, rep *Report) error {
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var names []string
		var gone []Version
		err := s.cfg.Store.View(func(tx *meta.Tx) error {
			tx.PackageNamesAfter(rr.repo.ID, after, func(name string) bool {
				names = append(names, name)
				return len(names) < page
			})
			for _, name := range names {
				vs, err := s.choose(tx, rr, name, tracked, rep)
				if err != nil {
					return err
				}
				gone = append(gone, vs...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading repository %s: %w", rr.repo.Name, err)
		}
		for _, v := range gone {
			if rep.Versions >= MaxPerRun {
				rep.Limited = true
				return nil
			}
			if !rep.DryRun {
				if err := s.deleteVersion(ctx, &rr.repo, v); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					rep.Failed++
					if len(rep.Errors) < maxErrors {
						rep.Errors = append(rep.Errors, fmt.Sprintf("%s %s@%s: %v", rr.repo.Name, v.Package, v.Version, err))
					}
					continue
				}
			}
			rep.Versions++
			rep.Files += v.Files
			rep.Bytes += v.SizeBytes
			if len(rep.Deleted) < MaxListed {
				rep.Deleted = append(rep.Deleted, v)
			} else {
				rep.Truncated = true
			}
		}
		if len(names) < page {
			return nil
		}
		after = names[len(names)-1]
	}
}

// choose lists the versions of a package the rule lets go: never its
// newest upload (the package's latest) nor what its format pins; among
// the rest, those beyond the KeepLast newest, uploaded more than
// OlderThanDays ago and not downloaded in the last KeepDownloadedDays
// (each condition when set). A version uploaded before downloads were
// tracked (tracked, a Unix day; 0: not yet) counts as downloaded then.
func (s *Service) choose(tx *meta.Tx, rr repoRule, name string, tracked int64, rep *Report) ([]Version, error) {
	vs, err := tx.Versions(rr.repo.ID, name)
	if err != nil {
		return nil, err
	}
	rep.Packages++
	rep.VersionsExamined += len(vs)
	if len(vs) <= 1 {
		return nil, nil
	}
	var pinned map[string]bool
	if p, ok := s.cfg.Formats[rr.repo.Format].(format.Pinner); ok {
		if pinned, err = p.Pinned(tx, &rr.repo, name); err != nil {
			return nil, err
		}
	}
	seen, err := tx.VersionsDownloaded(rr.repo.ID, name)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	today := meta.UnixDay(now)
	rule := rr.rule
	var out []Version
	for i, v := range vs {
		last := seen[v.Version]
		switch {
		case i == 0 || pinned[v.Version]:
			continue
		case rule.KeepLast > 0 && i < rule.KeepLast:
			continue
		case rule.OlderThanDays > 0 && now.Sub(v.UploadedAt) < time.Duration(rule.OlderThanDays)*24*time.Hour:
			continue
		case rule.KeepDownloadedDays > 0:
			known := last
			if tracked == 0 {
				known = today // nothing recorded yet: it may be in use
			} else if meta.UnixDay(v.UploadedAt) < tracked && known < tracked {
				known = tracked
			}
			if known >= today-int64(rule.KeepDownloadedDays) {
				continue
			}
		}
		g := Version{RepositoryID: rr.repo.ID, Repository: rr.repo.Name, Package: name, Version: v.Version,
			UploadedAt: v.UploadedAt, Files: v.FileCount, SizeBytes: v.SizeBytes, Rule: rr.named + ": " + rule.String()}
		if last > 0 {
			t := time.Unix(last*86400, 0).UTC()
			g.LastDownloaded = &t
		}
		out = append(out, g)
	}
	return out, nil
}

// deleteVersion deletes every file of a version through its format,
// the main file first (a format may take the others with it).
func (s *Service) deleteVersion(ctx context.Context, repo *meta.Repository, v Version) error {
	for range v.Files + 1 {
		var files []meta.Artifact
		if err := s.cfg.Store.View(func(tx *meta.Tx) error {
			var err error
			files, err = tx.VersionFiles(repo.ID, v.Package, v.Version)
			return err
		}); err != nil {
			return err
		}
		if len(files) == 0 {
			return nil
		}
		next := &files[0]
		for i := range files {
			if !files[i].Companion {
				next = &files[i]
				break
			}
		}
		if err := s.cfg.Delete(ctx, repo, next); err != nil && !errors.Is(err, meta.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("files of the version are left after deleting each once")
}

// observe logs a run, counts it and records one that deleted. A run with
// no rule to apply leaves no trace but a debug line.
func (s *Service) observe(ctx context.Context, rep Report, by string, err error) {
	if err == nil && rep.Repositories == 0 && !rep.DryRun {
		s.cfg.Log.Debug("no repository has a retention rule that deletes", "by", by)
		return
	}
	attrs := []any{"dry_run", rep.DryRun, "repositories", rep.Repositories, "versions", rep.Versions, "files", rep.Files,
		"bytes", rep.Bytes, "failed", rep.Failed, "limited", rep.Limited, "duration_ms", rep.DurationMS, "by", by}
	switch {
	case err != nil:
		s.cfg.Log.Error("applying the retention rules failed", append(attrs, "err", err)...)
	case rep.Failed > 0:
		s.cfg.Log.Warn("retention rules applied; some versions could not be deleted", append(attrs, "first_error", rep.Errors[0])...)
	default:
		s.cfg.Log.Info("retention rules applied", attrs...)
	}
	if rep.DryRun {
		return
	}
	if m := s.cfg.Metrics; m != nil {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		} else {
			m.LastSuccess.SetToCurrentTime()
		}
		m.Runs.WithLabelValues(outcome).Inc()
		m.Versions.Add(float64(rep.Versions))
		m.Files.Add(float64(rep.Files))
		m.Bytes.Add(float64(rep.Bytes))
	}
	run := meta.RetentionRun{StartedAt: rep.StartedAt, FinishedAt: s.cfg.Now().UTC(), By: by, Repositories: rep.Repositories,
		Versions: rep.Versions, Files: rep.Files, Bytes: rep.Bytes, Failed: rep.Failed}
	if err != nil {
		run.Error = err.Error()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.cfg.Commit.Apply(rctx, &meta.RetentionRan{Run: &run, Day: meta.UnixDay(s.cfg.Now())}); err != nil && !errors.Is(err, meta.ErrUpgrading) {
		s.cfg.Log.Warn("recording the retention run", "err", err)
	}
}

// Run applies the rules on schedule while ctx lasts (this origin leads):
// when Every has passed since the last run that deleted, whichever
// origin made it, or, before any, since the leader first found a rule to
// apply (so a new rule can be previewed before it deletes anything).
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		s.due(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) due(ctx context.Context) {
	_, every := s.cfg.Default()
	if every <= 0 {
		return
	}
	var st meta.RetentionState
	var todo []repoRule
	if err := s.cfg.Store.View(func(tx *meta.Tx) error {
		st = tx.Retention()
		var err error
		todo, err = s.rules(tx)
		return err
	}); err != nil || len(todo) == 0 {
		return
	}
	now := s.cfg.Now().UTC()
	var from time.Time
	switch {
	case st.Last != nil:
		from = st.Last.StartedAt
	case st.ScheduledSince != nil:
		from = *st.ScheduledSince
	default:
		if _, err := s.cfg.Commit.Apply(ctx, &meta.RetentionRan{Scheduled: &now}); err != nil && ctx.Err() == nil && !errors.Is(err, meta.ErrUpgrading) {
			s.cfg.Log.Warn("starting the retention schedule", "err", err)
		} else if err == nil {
			s.cfg.Log.Info("retention rules found: the leader applies them from "+now.Add(every).Format(time.RFC3339)+
				"; preview them with POST /api/v1/admin/cleanup?dry_run=true", "repositories", len(todo))
		}
		return
	}
	if now.Sub(from) < every {
		return
	}
	if _, err := s.Apply(ctx, false, "schedule"); errors.Is(err, ErrRunning) {
		s.cfg.Log.Info("scheduled retention run skipped: one is running")
	}
}
