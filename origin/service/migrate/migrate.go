// Package migrate moves repositories from another registry (JFrog
// Artifactory) into this one, as a job of the cluster's leader: each
// source file is downloaded, checked against the source's checksum and
// written through its format's own write path, as the format's client
// would upload it, with the administrator who made the migration as the
// uploader. Progress is replicated as it goes: a migration whose leader
// stopped is interrupted, and resumed it lists the source again, skipping
// what is already here with the source's checksum (nothing is
// downloaded twice, nothing stored twice).
package migrate

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/origin/service/migrate/artifactory"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Defaults of a migration's options.
const (
	DefaultParallel = 4
	DefaultBatch    = 100
	DefaultRetries  = 3
	DefaultTimeout  = 300 // seconds per transfer
	maxParallel     = 32
	maxBatch        = 1000
)

// formats maps Artifactory's package types to the formats here.
var formats = map[string]string{
	"generic": "generic", "maven": "maven", "gradle": "gradle", "npm": "npm", "pypi": "pypi", "docker": "docker",
	"go": "go", "helm": "helm", "nuget": "nuget", "gems": "rubygems", "composer": "composer", "conda": "conda", "cargo": "crates",
}

// Config of a Service.
type Config struct {
	Store  *meta.Store
	Commit meta.Committer
	// Servers are the format servers writes go through, by repository
	// format.
	Servers map[string]*format.Server
	// CreateRepo makes a repository for a migrated one, as p.
	CreateRepo func(ctx context.Context, p *auth.Principal, name, formatName, description string) (*meta.Repository, error)
	// Principal is the administrator a migration writes as, as they are
	// now (an error when no longer an administrator).
	Principal func(userID string) (*auth.Principal, error)
	Node      string
	Now       func() time.Time
	Log       *slog.Logger
	HTTP      *http.Client
	// SpillDir holds files while they are checked.
	SpillDir string
	// Accounts are the use cases permissions are migrated through (nil:
	// they are not).
	Accounts Accounts
	// Room is the space uploads may still use here: free space above the
	// minimum kept (ok false: not known).
	Room func() (bytes int64, ok bool)
	Poll time.Duration
}

// Service runs migrations.
type Service struct {
	cfg     Config
	wake    chan struct{}
	running sync.Map // migration id -> true, run here
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Transport: http.DefaultTransport}
	}
	return &Service{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the leader look for migrations to run now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Options fills in the defaults of a migration's options and refuses
// values out of bounds (a field name and why).
func Options(o meta.MigrationOptions) (meta.MigrationOptions, string, string) {
	switch {
	case o.ParallelTransfers < 0 || o.ParallelTransfers > maxParallel:
		return o, "options.parallel_transfers", fmt.Sprintf("from 1 to %d", maxParallel)
	case o.BatchSize < 0 || o.BatchSize > maxBatch:
		return o, "options.batch_size", fmt.Sprintf("from 1 to %d", maxBatch)
	case o.RetryAttempts < 0 || o.RetryAttempts > 10:
		return o, "options.retry_attempts", "from 0 to 10"
	case o.TimeoutSeconds < 0 || o.TimeoutSeconds > 24*3600:
		return o, "options.timeout_seconds", "from 1 to 86400"
	}
	if o.ParallelTransfers == 0 {
		o.ParallelTransfers = DefaultParallel
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatch
	}
	if o.TimeoutSeconds == 0 {
		o.TimeoutSeconds = DefaultTimeout
	}
	return o, "", ""
}

// client is a source's client.
func (s *Service) client(src meta.MigrationSource, timeout time.Duration) (*artifactory.Client, error) {
	if src.Type != "artifactory" {
		return nil, fmt.Errorf("source type %q is not one this registry reads (artifactory)", src.Type)
	}
	hc := *s.cfg.HTTP
	hc.Timeout = timeout
	return artifactory.New(src.URL, src.Username, src.Password, &hc)
}

// CheckSource reads the source as a migration's creation does: it
// answers, takes the credentials, and has each repository named. It
// returns the repositories it has, by key.
func (s *Service) CheckSource(ctx context.Context, src meta.MigrationSource, repos []string) (map[string]artifactory.Repo, error) {
	c, err := s.client(src, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx); err != nil {
		return nil, err
	}
	list, err := c.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	byKey := map[string]artifactory.Repo{}
	for _, r := range list {
		byKey[r.Key] = r
	}
	var missing []string
	for _, r := range repos {
		if _, ok := byKey[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return byKey, &MissingError{Repositories: missing}
	}
	return byKey, nil
}

// MissingError names repositories the source does not have.
type MissingError struct{ Repositories []string }

func (e *MissingError) Error() string {
	return "the source has no repository " + strings.Join(e.Repositories, ", ")
}

// Run runs migrations while ctx lasts (this origin leads): first it marks
// interrupted those another leader (or this origin before a restart) was
// running; then it runs each migration started or resumed, one at a time.
func (s *Service) Run(ctx context.Context) {
	s.interruptOrphans(ctx)
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		var next *meta.Migration
		_ = s.cfg.Store.View(func(tx *meta.Tx) error {
			list, err := tx.Migrations()
			for i := len(list) - 1; i >= 0 && err == nil; i-- { // oldest first
				if list[i].Status == meta.MigrationInProgress && list[i].Node == "" {
					next, err = tx.Migration(list[i].ID)
					break
				}
			}
			return err
		})
		if next != nil {
			s.running.Store(next.ID, true)
			s.run(ctx, next)
			s.running.Delete(next.ID)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// interruptOrphans marks interrupted the migrations in progress that no
// one runs any more.
func (s *Service) interruptOrphans(ctx context.Context) {
	var orphans []meta.Migration
	_ = s.cfg.Store.View(func(tx *meta.Tx) error {
		list, err := tx.Migrations()
		for _, m := range list {
			if m.Status == meta.MigrationInProgress && m.Node != "" {
				if full, err := tx.Migration(m.ID); err == nil {
					orphans = append(orphans, *full)
				}
			}
		}
		return err
	})
	for _, m := range orphans {
		was := m.Node
		m.Status, m.Node = meta.MigrationInterrupted, ""
		if _, err := s.cfg.Commit.Apply(ctx, meta.NewMigrationPut(m, false, meta.MigrationInProgress)); err == nil {
			s.entry(ctx, m.ID, "warn", fmt.Sprintf("interrupted: origin %s stopped running it; resume it to go on from where it was", was))
		}
	}
}

// entry appends a log line.
func (s *Service) entry(ctx context.Context, id, level, msg string) {
	_, _ = s.cfg.Commit.Apply(context.WithoutCancel(ctx), &meta.MigrationEntries{ID: id,
		Entries: []meta.MigrationEntry{{At: s.cfg.Now().UTC(), Kind: "log", Level: level, Message: msg}}})
}

// errStopped: the migration was cancelled (or taken over) meanwhile.
var errStopped = errors.New("the migration was stopped")

// errNoSpace: the data disk here is nearly full; the migration stops,
// interrupted, to be resumed once there is room.
var errNoSpace = errors.New("the data disk here is nearly full")

// job is one migration being run.
type job struct {
	s       *Service
	m       meta.Migration
	p       *auth.Principal
	src     *artifactory.Client
	mu      sync.Mutex
	prog    meta.MigrationProgress
	log     []meta.MigrationEntry // not yet committed
	start   time.Time
	handled int64 // files handled in this run, for the estimate
	// packages moved, by repository here (seen: the same, as a set)
	packages map[string][]string
	seen     map[string]bool
	locks    map[string]*sync.Mutex // by key, see lock
	abort    error                  // stops the job after the page (errNoSpace)
}

// run runs one migration to its end (or until it is stopped).
func (s *Service) run(ctx context.Context, m *meta.Migration) {
	now := s.cfg.Now().UTC()
	m.Node = s.cfg.Node
	if m.StartedAt == nil {
		m.StartedAt = &now
	}
	if _, err := s.cfg.Commit.Apply(ctx, meta.NewMigrationPut(*m, false, meta.MigrationInProgress)); err != nil {
		return
	}
	j := &job{s: s, m: *m, prog: m.Progress, start: time.Now()}
	err := j.runAll(ctx)
	if ctx.Err() != nil || errors.Is(err, errStopped) {
		j.flush(context.WithoutCancel(ctx))
		return // the next leader marks it interrupted; or it was cancelled
	}
	done := s.cfg.Now().UTC()
	j.m.FinishedAt, j.m.EstimatedCompletion = &done, nil
	switch {
	case errors.Is(err, errNoSpace):
		j.m.Status, j.m.Error, j.m.FinishedAt = meta.MigrationInterrupted, err.Error()+": free space (or lower --min-free-bytes), then resume it", nil
		j.logf("error", "stopped: %s", j.m.Error)
	case err != nil:
		j.m.Status, j.m.Error = meta.MigrationFailed, err.Error()
		j.logf("error", "failed: %v", err)
	case j.prog.FailedArtifacts > 0:
		j.m.Status = meta.MigrationCompletedWithErrors
	default:
		j.m.Status = meta.MigrationCompleted
	}
	j.logf("info", "%s: %d files migrated, %d failed, %d skipped", j.m.Status, j.prog.MigratedArtifacts, j.prog.FailedArtifacts, j.prog.SkippedArtifacts)
	j.m.Progress = j.progress()
	j.m.Progress.CurrentRepository = ""
	j.flush(context.WithoutCancel(ctx))
	_, _ = s.cfg.Commit.Apply(context.WithoutCancel(ctx), meta.NewMigrationPut(j.m, false, meta.MigrationInProgress))
}

func (j *job) logf(level, format string, args ...any) {
	j.mu.Lock()
	j.log = append(j.log, meta.MigrationEntry{At: j.s.cfg.Now().UTC(), Kind: "log", Level: level, Message: fmt.Sprintf(format, args...)})
	j.mu.Unlock()
}

func (j *job) failure(repo, p string, size int64, why string) {
	j.mu.Lock()
	j.handled++
	j.prog.FailedArtifacts++
	j.log = append(j.log, meta.MigrationEntry{At: j.s.cfg.Now().UTC(), Kind: "failure", Message: why, Repository: repo, Path: p, Size: size})
	j.mu.Unlock()
}

// flush commits the entries gathered.
func (j *job) flush(ctx context.Context) {
	j.mu.Lock()
	entries := j.log
	j.log = nil
	j.mu.Unlock()
	for len(entries) > 0 {
		n := min(len(entries), 1000)
		if _, err := j.s.cfg.Commit.Apply(ctx, &meta.MigrationEntries{ID: j.m.ID, Entries: entries[:n]}); err != nil {
			j.s.cfg.Log.Warn("recording a migration's log", "migration", j.m.ID, "err", err)
			return
		}
		entries = entries[n:]
	}
}

// checkpoint commits the progress (and the log): an error when the
// migration is no longer in progress here (cancelled).
func (j *job) checkpoint(ctx context.Context) error {
	j.flush(ctx)
	j.mu.Lock()
	j.m.Progress = j.progress()
	// The estimate: the files left at the rate of this run's.
	handled := j.prog.MigratedArtifacts + j.prog.FailedArtifacts + j.prog.SkippedArtifacts
	if el := time.Since(j.start); j.handled > 0 && el > time.Second && j.prog.TotalArtifacts > handled {
		left := time.Duration(float64(j.prog.TotalArtifacts-handled) / float64(j.handled) * float64(el))
		eta := j.s.cfg.Now().UTC().Add(left).Truncate(time.Second)
		j.m.EstimatedCompletion = &eta
	}
	m := j.m
	j.mu.Unlock()
	_, err := j.s.cfg.Commit.Apply(ctx, meta.NewMigrationPut(m, false, meta.MigrationInProgress))
	if errors.Is(err, meta.ErrConflict) {
		return errStopped
	}
	return err
}

// checkRoom stops a migration before it starts moving when the
// repositories left need more than the room uploads have here (by the
// source's storage summary; without one, or without knowing the room,
// nothing is checked before: the uploads' own bound holds during).
func (j *job) checkRoom(ctx context.Context) error {
	if j.s.cfg.Room == nil || j.m.Options.DryRun {
		return nil
	}
	room, ok := j.s.cfg.Room()
	if !ok {
		return nil
	}
	used, err := j.src.UsedBytes(ctx)
	if err != nil {
		j.logf("warn", "the source's storage summary could not be read (%v): free space is checked as files arrive", err)
		return nil
	}
	var need int64
	for _, key := range j.m.Repositories {
		if !slices.Contains(j.m.Done, key) {
			need += used[key]
		}
	}
	if need > room {
		return fmt.Errorf("%w: the repositories left use %s at the source, uploads here have %s (free space above --min-free-bytes)",
			errNoSpace, config.FormatBytes(need), config.FormatBytes(room))
	}
	return nil
}

// progress is the progress with its percentage; j.mu is held.
func (j *job) progress() meta.MigrationProgress {
	p := j.prog
	if p.TotalArtifacts > 0 {
		p.PercentComplete = float64(int(1000*float64(p.MigratedArtifacts+p.FailedArtifacts+p.SkippedArtifacts)/float64(p.TotalArtifacts))) / 10
	}
	return p
}

// runAll moves every repository not done yet.
func (j *job) runAll(ctx context.Context) error {
	s := j.s
	p, err := s.cfg.Principal(j.m.CreatedByID)
	if err != nil {
		return fmt.Errorf("its creator can no longer write here: %w", err)
	}
	j.p = p
	opts, _, _ := Options(j.m.Options)
	j.m.Options = opts
	if j.src, err = s.client(j.m.Source, time.Duration(opts.TimeoutSeconds)*time.Second); err != nil {
		return err
	}
	byKey, err := s.CheckSource(ctx, j.m.Source, j.m.Repositories)
	if err != nil {
		return err
	}
	if err := j.checkRoom(ctx); err != nil {
		return err
	}
	// Totals first, so the progress has them from the start.
	j.prog.TotalArtifacts = 0
	for _, key := range j.m.Repositories {
		r := byKey[key]
		if _, ok := adapters[formats[strings.ToLower(r.PackageType)]]; r.Local() && ok {
			page, err := j.src.Items(ctx, key, 0, 1)
			if err != nil {
				return err
			}
			j.prog.TotalArtifacts += page.Total
		}
	}
	if j.m.Base == nil {
		j.m.Base = &meta.MigrationProgress{}
	}
	for _, key := range j.m.Repositories {
		if slices.Contains(j.m.Done, key) {
			continue
		}
		// A repository resumed starts over from what was done before it:
		// its files already here are counted again as they are found.
		base := *j.m.Base
		j.prog.MigratedArtifacts, j.prog.FailedArtifacts, j.prog.SkippedArtifacts = base.MigratedArtifacts, base.FailedArtifacts, base.SkippedArtifacts
		j.prog.Bytes, j.prog.Verified = base.Bytes, base.Verified
		j.prog.WithProperties, j.prog.PropertiesDropped = base.WithProperties, base.PropertiesDropped
		j.prog.CurrentRepository = key
		if err := j.repository(ctx, byKey[key]); err != nil {
			return err
		}
		j.m.Done = append(j.m.Done, key)
		b := j.prog
		j.m.Base = &b
		if err := j.checkpoint(ctx); err != nil {
			return err
		}
	}
	if j.m.Options.IncludePermissions && !j.m.Options.DryRun && j.m.Permissions == "" {
		if err := j.permissions(ctx); err != nil {
			return err
		}
		return j.checkpoint(ctx)
	}
	return nil
}

// repository moves one repository's files, page by page.
func (j *job) repository(ctx context.Context, r artifactory.Repo) error {
	formatName := formats[strings.ToLower(r.PackageType)]
	switch {
	case !r.Local():
		j.logf("warn", "%s: skipped: a %s repository holds no files of its own (only local repositories are migrated)", r.Key, strings.ToLower(r.Type))
		return nil
	case adapters[formatName].write == nil:
		j.logf("warn", "%s: skipped: package type %q is not one this registry serves", r.Key, r.PackageType)
		return nil
	}
	target := j.m.Targets[r.Key]
	if target == "" {
		target = r.Key
	}
	repo, err := j.targetRepo(ctx, target, formatName, r.Description)
	if err != nil {
		return err
	}
	j.logf("info", "%s: migrating into %s (%s)", r.Key, target, formatName)
	if err := j.checkpoint(ctx); err != nil {
		return err
	}
	opts := j.m.Options
	for offset := 0; ; offset += opts.BatchSize {
		page, err := j.src.Items(ctx, r.Key, offset, opts.BatchSize)
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.Key, err)
		}
		work := make(chan artifactory.Item)
		var wg sync.WaitGroup
		for range opts.ParallelTransfers {
			wg.Go(func() {
				for it := range work {
					j.file(ctx, r.Key, repo, formatName, it)
				}
			})
		}
		for _, it := range page.Items {
			work <- it
		}
		close(work)
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := j.checkpoint(ctx); err != nil {
			return err
		}
		j.mu.Lock()
		abort := j.abort
		j.mu.Unlock()
		if abort != nil {
			return abort
		}
		if len(page.Items) < opts.BatchSize {
			break
		}
	}
	if formatName == "npm" && !opts.DryRun {
		j.npmTags(ctx, r.Key, repo)
	}
	return nil
}

// lock takes the job's lock of key (a blob being pushed), made on first
// use; it answers the unlock.
func (j *job) lock(key string) func() {
	j.mu.Lock()
	if j.locks == nil {
		j.locks = map[string]*sync.Mutex{}
	}
	l := j.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		j.locks[key] = l
	}
	j.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// touched notes a package moved into a repository (for what is set once
// the repository is moved: npm's dist-tags).
func (j *job) touched(repo, pkg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen == nil {
		j.seen, j.packages = map[string]bool{}, map[string][]string{}
	}
	if k := repo + "\x00" + pkg; !j.seen[k] {
		j.seen[k] = true
		j.packages[repo] = append(j.packages[repo], pkg)
	}
}

// targetRepo is the repository here a source repository moves into,
// made when missing.
func (j *job) targetRepo(ctx context.Context, name, formatName, description string) (*meta.Repository, error) {
	var repo *meta.Repository
	err := j.s.cfg.Store.View(func(tx *meta.Tx) error {
		var err error
		repo, err = tx.RepoByName(name)
		return err
	})
	switch {
	case err == nil && repo.Format != formatName:
		return nil, fmt.Errorf("repository %s exists here as a %s repository, not %s: map the source's to another name", name, repo.Format, formatName)
	case err == nil:
		return repo, nil
	case !errors.Is(err, meta.ErrNotFound):
		return nil, err
	case j.m.Options.DryRun:
		return &meta.Repository{Name: name, Format: formatName}, nil
	}
	repo, err = j.s.cfg.CreateRepo(ctx, j.p, name, formatName, description)
	if err == nil {
		j.logf("info", "created repository %s (%s)", name, formatName)
	}
	return repo, err
}

// file moves one file: skipped when the registry writes it itself or
// has it already (the same checksum at the same path), else downloaded
// (retried), checked and written through the format.
func (j *job) file(ctx context.Context, srcRepo string, repo *meta.Repository, formatName string, it artifactory.Item) {
	p := it.FullPath()
	size := int64(it.Size)
	ad := adapters[formatName]
	if why := ad.skip(p); why != "" {
		j.mu.Lock()
		j.handled++
		j.prog.SkippedArtifacts++
		j.mu.Unlock()
		return
	}
	here, err := ad.target(p)
	if err != nil {
		j.failure(srcRepo, p, size, err.Error())
		return
	}
	if repo.ID != "" {
		if have := j.have(repo, here, it.SHA256, it.SHA1); have != nil {
			if same(have, it) {
				j.properties(ctx, srcRepo, p, have)
				j.done(size, false)
				return
			}
			j.failure(srcRepo, p, size, "a different file is at this path here already")
			return
		}
	}
	if j.m.Options.DryRun {
		j.done(size, false)
		return
	}
	opts := j.m.Options
	props, dropped := j.sourceProperties(ctx, srcRepo, p)
	for attempt := 0; attempt <= opts.RetryAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(1<<(attempt-1)) * time.Second):
			case <-ctx.Done():
				return
			}
		}
		var verified bool
		verified, err = j.copy(ctx, srcRepo, repo, ad, p, source{item: it, properties: props})
		if err == nil {
			j.countProperties(props, dropped)
			j.done(size, verified)
			return
		}
		if ctx.Err() != nil {
			return
		}
		var final *finalError
		if errors.As(err, &final) {
			break
		}
		if errors.Is(err, errNoSpace) {
			j.mu.Lock()
			j.abort = err // the file is not a failure: the job stops here
			j.mu.Unlock()
			return
		}
	}
	j.failure(srcRepo, p, size, err.Error())
}

// have is the artifact here a source file became: at its path here, or,
// where only the file's content says that path (here ""), the
// repository's artifact with the file's checksum (sha256, else sha1).
func (j *job) have(repo *meta.Repository, here, sha256, sha1 string) *meta.Artifact {
	var a *meta.Artifact
	_ = j.s.cfg.Store.View(func(tx *meta.Tx) error {
		if here != "" {
			a, _ = tx.ArtifactByPath(repo.ID, here)
			return nil
		}
		alg, sum := "sha256", sha256
		if sum == "" {
			alg, sum = "sha1", sha1
		}
		if sum == "" {
			return nil
		}
		for _, id := range tx.ArtifactsByChecksum(alg, sum, 1000) {
			if x, err := tx.Artifact(id); err == nil && x.RepositoryID == repo.ID {
				a = x
				return nil
			}
		}
		return nil
	})
	return a
}

// sourceProperties are the source file's properties this registry
// keeps (with include_metadata; none in a dry run), and how many it
// drops, beyond its bounds (named in the log). A failure to read them
// is logged: the file moves without them.
func (j *job) sourceProperties(ctx context.Context, srcRepo, p string) (map[string][]string, int) {
	if !j.m.Options.IncludeMetadata || j.m.Options.DryRun {
		return nil, 0
	}
	tctx, cancel := context.WithTimeout(ctx, time.Duration(j.m.Options.TimeoutSeconds)*time.Second)
	defer cancel()
	src, err := j.src.Properties(tctx, srcRepo, p)
	if err != nil {
		j.logf("warn", "%s/%s: its properties could not be read: %v", srcRepo, p, err)
		return nil, 0
	}
	kept, dropped := fitProperties(src)
	if len(dropped) > 0 {
		j.logf("warn", "%s/%s: properties not kept (beyond this registry's bounds): %s", srcRepo, p, strings.Join(dropped, ", "))
	}
	return kept, len(dropped)
}

// properties sets artifact a's properties (a file found here already)
// as the source file's are, when they differ.
func (j *job) properties(ctx context.Context, srcRepo, p string, a *meta.Artifact) {
	if !j.m.Options.IncludeMetadata || j.m.Options.DryRun {
		return
	}
	kept, dropped := j.sourceProperties(ctx, srcRepo, p)
	if !meta.SameProperties(kept, a.Properties) {
		if _, err := j.s.cfg.Commit.Apply(ctx, &meta.ArtifactProperties{ID: a.ID, RepoID: a.RepositoryID, Replace: true, Set: kept}); err != nil {
			j.logf("warn", "%s/%s: its properties could not be set: %v", srcRepo, p, err)
			return
		}
	}
	j.countProperties(kept, dropped)
}

// countProperties counts a file's properties kept and dropped.
func (j *job) countProperties(kept map[string][]string, dropped int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.prog.PropertiesDropped += int64(dropped)
	if len(kept) > 0 {
		j.prog.WithProperties++
	}
}

// fitProperties keeps the properties this registry's bounds allow, in
// key order, naming the keys it drops.
func fitProperties(src map[string][]string) (kept map[string][]string, dropped []string) {
	keys := slices.Sorted(maps.Keys(src))
	kept = map[string][]string{}
	for _, k := range keys {
		kept[k] = src[k]
		if meta.CheckProperties(kept) != nil {
			delete(kept, k)
			dropped = append(dropped, k)
		}
	}
	return kept, dropped
}

func (j *job) done(size int64, verified bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.handled++
	j.prog.MigratedArtifacts++
	j.prog.Bytes += size
	if verified {
		j.prog.Verified++
	}
}

// same reports whether an artifact here is the source's file.
func same(a *meta.Artifact, it artifactory.Item) bool {
	switch {
	case it.SHA256 != "":
		return strings.EqualFold(a.Checksums.SHA256, it.SHA256)
	case it.SHA1 != "":
		return strings.EqualFold(a.Checksums.SHA1, it.SHA1)
	}
	return a.SizeBytes == int64(it.Size)
}

// finalError is a failure no retry mends (the format refused the file).
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }

// copy downloads a file into a spill file, checks it against the
// source's checksum, and writes it through the format.
func (j *job) copy(ctx context.Context, srcRepo string, repo *meta.Repository, ad adapter, p string, src source) (bool, error) {
	it := src.item
	tctx, cancel := context.WithTimeout(ctx, time.Duration(j.m.Options.TimeoutSeconds)*time.Second)
	defer cancel()
	tooLong := fmt.Errorf("the transfer took longer than %d s (timeout_seconds)", j.m.Options.TimeoutSeconds)
	body, err := j.src.Open(tctx, srcRepo, p)
	if err != nil {
		if tctx.Err() != nil && ctx.Err() == nil {
			return false, tooLong
		}
		return false, err
	}
	defer body.Close()
	if err := os.MkdirAll(j.s.cfg.SpillDir, 0o700); err != nil {
		return false, err
	}
	f, err := os.CreateTemp(j.s.cfg.SpillDir, "file-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h256, h1 := sha256.New(), sha1.New()
	n, err := io.Copy(io.MultiWriter(f, h256, h1), body)
	if err != nil {
		if tctx.Err() != nil && ctx.Err() == nil {
			return false, tooLong
		}
		return false, fmt.Errorf("downloading it: %w", err)
	}
	if size := int64(it.Size); size > 0 && n != size {
		return false, fmt.Errorf("downloaded %d bytes, the source says %d", n, size)
	}
	verified := false
	if j.m.Options.ValidateChecksums {
		got256, got1 := hex.EncodeToString(h256.Sum(nil)), hex.EncodeToString(h1.Sum(nil))
		switch {
		case it.SHA256 != "" && !strings.EqualFold(got256, it.SHA256):
			return false, fmt.Errorf("checksum mismatch: the source's sha256 is %s, the bytes downloaded have %s; not stored", it.SHA256, got256)
		case it.SHA256 == "" && it.SHA1 != "" && !strings.EqualFold(got1, it.SHA1):
			return false, fmt.Errorf("checksum mismatch: the source's sha1 is %s, the bytes downloaded have %s; not stored", it.SHA1, got1)
		}
		verified = it.SHA256 != "" || it.SHA1 != ""
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	if err := ad.write(context.WithValue(ctx, itemKey{}, src), j, srcRepo, repo, p, f, n); err != nil {
		return false, err
	}
	return verified, nil
}
