// Package scan is the origin's security scanner: it keeps the advisory
// database in force (Load merges OSV records into it and stores it as a
// blob every origin reads), and, on the cluster's leader, takes queued
// scans from the replicated queue, matches the package and the
// dependencies it pins against the database (shared/vuln), stores the
// report as a blob and completes the scan, which records scan.completed.
// A scan another leader left running is queued again, so a failover
// loses none.
package scan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
)

// Scanner is the built-in scanner's name.
const Scanner = "osv"

// Bounds.
const (
	// MaxFindings bounds a report's findings (a lockfile's worth).
	MaxFindings = 5000
	// maxDatabase bounds the database blob read back, unpacked.
	maxDatabase = 1 << 30
)

// Config of a Service.
type Config struct {
	Store   *meta.Store
	Commit  meta.Committer
	Blobs   blob.Store
	Formats map[string]format.Format
	NewID   func() string
	Node    string
	Now     func() time.Time
	Log     *slog.Logger
	// Concurrency is how many scans run at once (default 2); Poll how
	// often the queue is looked at besides wake-ups (default 2 s).
	Concurrency int
	Poll        time.Duration
	// ReportURL is where the API serves a scan's report.
	ReportURL func(scanID string) string
	// ScanOnUpload is the default of repositories that do not say
	// whether their uploads are scanned (nil: they are).
	ScanOnUpload func() bool
	// Directory is where the leader loads advisories from ("" or nil:
	// nowhere).
	Directory func() string
}

// Service scans and keeps the advisory database.
type Service struct {
	cfg  Config
	wake chan struct{}

	mu       sync.Mutex // the database cache
	db       *vuln.DB
	dbDigest string
	loading  sync.Mutex // one load at a time here (the record's precondition across origins)
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ReportURL == nil {
		cfg.ReportURL = func(id string) string { return "/api/v1/security/scans/" + id }
	}
	return &Service{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the leader look at the queue now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Database is the advisory database in force, read from its blob once
// per change (nil with a nil record: none loaded yet).
func (s *Service) Database(ctx context.Context) (*vuln.DB, *meta.AdvisoryDB, error) {
	var rec *meta.AdvisoryDB
	if err := s.cfg.Store.View(func(tx *meta.Tx) error { rec = tx.AdvisoryDB(); return nil }); err != nil {
		return nil, nil, err
	}
	if rec == nil {
		return nil, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dbDigest == rec.Digest {
		return s.db, rec, nil
	}
	advs, err := s.readDatabase(ctx, rec.Digest)
	if err != nil {
		return nil, rec, fmt.Errorf("reading the advisory database %s: %w", rec.Digest, err)
	}
	s.db, s.dbDigest = vuln.Build(advs), rec.Digest
	return s.db, rec, nil
}

func (s *Service) readDatabase(ctx context.Context, digest string) ([]vuln.Advisory, error) {
	f, err := s.cfg.Blobs.Open(ctx, digest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	sc := bufio.NewScanner(io.LimitReader(zr, maxDatabase))
	sc.Buffer(make([]byte, 64<<10), vuln.MaxRecord+1)
	var out []vuln.Advisory
	for sc.Scan() {
		a, err := vuln.Parse(sc.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// Load merges advisories into the database in force (a record of an id
// already there replaces it unless it is older) and puts the result in
// force on every origin, for by, from source (a file's name).
func (s *Service) Load(ctx context.Context, advs []vuln.Advisory, source, by string) (meta.AdvisoryLoad, *meta.AdvisoryDB, error) {
	s.loading.Lock()
	defer s.loading.Unlock()
	for attempt := 0; ; attempt++ {
		cur, rec, err := s.Database(ctx)
		if err != nil {
			return meta.AdvisoryLoad{}, nil, err
		}
		merged := map[string]vuln.Advisory{}
		if cur != nil {
			for _, a := range cur.Advisories() {
				merged[a.ID] = a
			}
		}
		load := meta.AdvisoryLoad{At: s.cfg.Now().UTC(), By: by, Source: source, Read: len(advs)}
		for _, a := range advs {
			old, ok := merged[a.ID]
			switch {
			case !ok:
				load.Added++
			case a.Modified.Before(old.Modified):
				continue
			default:
				load.Updated++
			}
			merged[a.ID] = a
		}
		db := vuln.Build(slices.Collect(maps.Values(merged)))
		info, err := s.writeDatabase(ctx, db)
		if err != nil {
			return load, nil, err
		}
		if rec != nil && info.Digest == rec.Digest {
			return load, rec, nil // the same records: nothing to put in force
		}
		next := meta.AdvisoryDB{Digest: info.Digest, SizeBytes: info.Size, Advisories: db.Len(), Ecosystems: db.Ecosystems(),
			LoadedAt: load.At, LoadedBy: by, Loads: []meta.AdvisoryLoad{load}}
		was := ""
		if rec != nil {
			was = rec.Digest
			next.Loads = append(next.Loads, rec.Loads[:min(len(rec.Loads), meta.MaxAdvisoryLoads-1)]...)
		}
		_, err = s.cfg.Commit.Apply(ctx, &meta.AdvisoriesSet{DB: next, Was: was})
		if errors.Is(err, meta.ErrConflict) && attempt < 3 {
			continue // another origin loaded meanwhile: merge into its database
		}
		if err != nil {
			return load, nil, err
		}
		s.cfg.Log.Info("advisories loaded", "source", source, "by", by, "read", load.Read, "added", load.Added,
			"updated", load.Updated, "advisories", next.Advisories)
		return load, &next, nil
	}
}

// writeDatabase stores the database as zstd-compressed JSON lines, in id
// order (the same records give the same blob).
func (s *Service) writeDatabase(ctx context.Context, db *vuln.DB) (blob.Info, error) {
	pr, pw := io.Pipe()
	go func() {
		zw, err := zstd.NewWriter(pw, zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		enc := json.NewEncoder(zw)
		for _, a := range db.Advisories() {
			if err = enc.Encode(a); err != nil {
				break
			}
		}
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	info, err := s.cfg.Blobs.Put(ctx, pr, blob.PutOptions{})
	pr.CloseWithError(err)
	return info, err
}

// Run takes the queue's scans while ctx lasts (this origin leads): first
// it queues again the scans another leader left running; and it queues
// the scans of new uploads (follow) and, when the advisories change, of
// everything scanned before (rescan).
func (s *Service) Run(ctx context.Context) {
	s.requeue(ctx)
	slots := make(chan struct{}, s.cfg.Concurrency)
	var running sync.Map // scan id -> true, taken here
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.follow(ctx) })
	wg.Go(func() { s.rescan(ctx) })
	wg.Go(func() { s.watch(ctx) })
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		var queue []meta.Scan
		_ = s.cfg.Store.View(func(tx *meta.Tx) error { queue = tx.ScanQueue(100); return nil })
		for _, sc := range queue {
			if sc.Status != meta.ScanQueued {
				continue
			}
			if _, taken := running.LoadOrStore(sc.ID, true); taken {
				continue
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-slots; running.Delete(sc.ID) }()
				s.run(ctx, sc)
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// requeue puts back the scans left running by an origin that no longer
// leads (this one's included, from before a restart).
func (s *Service) requeue(ctx context.Context) {
	var queue []meta.Scan
	_ = s.cfg.Store.View(func(tx *meta.Tx) error { queue = tx.ScanQueue(meta.MaxScansPerRequest); return nil })
	for _, sc := range queue {
		if sc.Status != meta.ScanRunning {
			continue
		}
		sc.Status, sc.StartedAt, sc.Node = meta.ScanQueued, nil, ""
		if _, err := s.cfg.Commit.Apply(ctx, &meta.ScanUpdate{Scan: sc, Was: meta.ScanRunning}); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("queueing again a scan its origin left running", "scan", sc.ID, "err", err)
		}
	}
}

// run scans one queued scan to its end.
func (s *Service) run(ctx context.Context, sc meta.Scan) {
	now := s.cfg.Now().UTC()
	sc.Status, sc.StartedAt, sc.Node = meta.ScanRunning, &now, s.cfg.Node
	if _, err := s.cfg.Commit.Apply(ctx, &meta.ScanUpdate{Scan: sc, Was: meta.ScanQueued}); err != nil {
		if !errors.Is(err, meta.ErrConflict) && ctx.Err() == nil {
			s.cfg.Log.Warn("starting a scan", "scan", sc.ID, "err", err)
		}
		return
	}
	rep, err := s.scan(format.BoundedElsewhere(ctx), &sc) // the workers bound the scans' reads
	if ctx.Err() != nil {
		return // the next leader queues it again
	}
	done := s.cfg.Now().UTC()
	sc.ScannedAt, sc.ReportURL = &done, s.cfg.ReportURL(sc.ID)
	if err == nil {
		var info blob.Info
		if info, err = s.writeReport(ctx, rep); err == nil {
			sc.Report = info.Digest
		}
	}
	if err != nil {
		sc.Status, sc.Error = meta.ScanFailed, err.Error()
	} else {
		sc.Status = meta.ScanCompleted
	}
	if _, err := s.cfg.Commit.Apply(context.WithoutCancel(ctx), &meta.ScanUpdate{Scan: sc, Was: meta.ScanRunning, Findings: rep.Flagged()}); err != nil {
		s.cfg.Log.Warn("recording a scan's outcome", "scan", sc.ID, "err", err)
		return
	}
	s.cfg.Log.Info("scan "+sc.Status, "scan", sc.ID, "artifact", sc.ArtifactID, "package", sc.PackageName, "version", sc.Version,
		"critical", sc.Vulnerabilities.Critical, "high", sc.Vulnerabilities.High, "medium", sc.Vulnerabilities.Medium,
		"low", sc.Vulnerabilities.Low, "unknown", sc.Vulnerabilities.Unknown, "not_scanned", sc.NotScanned, "err", sc.Error)
}

func (s *Service) writeReport(ctx context.Context, rep *Report) (blob.Info, error) {
	raw, err := json.Marshal(rep)
	if err != nil {
		return blob.Info{}, err
	}
	return s.cfg.Blobs.Put(ctx, bytes.NewReader(raw), blob.PutOptions{})
}

// OpenReport reads a scan's report.
func (s *Service) OpenReport(ctx context.Context, sc *meta.Scan) (*Report, error) {
	if sc.Report == "" {
		return nil, nil
	}
	f, err := s.cfg.Blobs.Open(ctx, sc.Report)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rep Report
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// Flagged is a report's findings as a verdict keeps them.
func (rep *Report) Flagged() []meta.Flagged {
	if rep == nil {
		return nil
	}
	out := make([]meta.Flagged, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		out = append(out, meta.Flagged{ID: f.ID, Aliases: f.Aliases, Severity: f.Severity, Package: f.Package})
	}
	return out
}
