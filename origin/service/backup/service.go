package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Config is the backup service's.
type Config struct {
	Store  *meta.Store
	Commit meta.Committer
	// Blobs is the cluster's blob store: the artifacts' blobs are read
	// from it and restored into it, and archives are written to it.
	Blobs blob.Store
	// Restore makes the cluster take on the metadata snapshot r (size
	// bytes, stamped at index) through the consensus log (raft's restore:
	// the followers install it as a snapshot). Leader only.
	Restore func(index uint64, size int64, r io.Reader) error
	// LastIndex is the consensus log's last index.
	LastIndex func() uint64
	Node      string // this origin's id
	WorkDir   string // for the files a backup or a restore spills
	Version   string
	Log       *slog.Logger
	Now       func() time.Time
	// Poll is how often the job looks for work when not woken (default 2 s).
	Poll time.Duration
	// Schedule gives the scheduled backups' settings now: how long after
	// the last one the next is made (0: none), how many are kept, and
	// whether they hold the files. Nil: none scheduled.
	Schedule func() (every time.Duration, keep int, artifacts bool)
	// NewID makes backup ids.
	NewID func() string
	// Export gives the directory a copy of each archive is written to
	// ("": none).
	Export func() string
}

// Service runs backups and restores on the leader (Run).
type Service struct {
	cfg  Config
	wake chan struct{}
}

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	return &Service{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the job look for work now (a backup or a restore asked for).
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run does the backups and restores asked for until ctx ends (the
// leadership went). What another leader left running is failed, for its
// archive or its restore was not finished.
func (s *Service) Run(ctx context.Context) {
	s.interrupted(ctx)
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		s.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// interrupted fails the backups and the restore a previous leader left
// running.
func (s *Service) interrupted(ctx context.Context) {
	var backups []meta.Backup
	var restore *meta.RestoreState
	_ = s.cfg.Store.View(func(tx *meta.Tx) error {
		backups, _ = tx.Backups()
		restore = tx.Restore()
		return nil
	})
	for _, b := range backups {
		if b.Status == meta.BackupRunning {
			s.finish(ctx, b, meta.BackupRunning, errors.New("interrupted: the origin running it stopped leading the cluster; start another"))
		}
	}
	if restore != nil && restore.Status == "running" {
		s.restoreDone(ctx, *restore, errors.New("interrupted: the origin running it stopped leading the cluster; the metadata is as it was unless the restore had reached it"))
	}
}

// step does the scheduled backup when it is due, the oldest backup
// asked for, then a restore asked for.
func (s *Service) step(ctx context.Context) {
	var pending *meta.Backup
	var restore *meta.RestoreState
	var backups []meta.Backup
	_ = s.cfg.Store.View(func(tx *meta.Tx) error {
		backups, _ = tx.Backups()
		for i := len(backups) - 1; i >= 0; i-- { // oldest first
			if backups[i].Status == meta.BackupPending {
				pending = &backups[i]
				break
			}
		}
		restore = tx.Restore()
		return nil
	})
	if pending == nil {
		pending = s.schedule(ctx, backups)
	}
	if pending != nil {
		s.backup(ctx, *pending)
	}
	if restore != nil && restore.Status == "requested" && ctx.Err() == nil {
		s.restore(ctx, *restore)
	}
}

// schedule asks for the scheduled backup when the last is older than the
// interval, and deletes the scheduled backups beyond those kept (backups
// lists every backup, newest first). It answers the backup asked for.
func (s *Service) schedule(ctx context.Context, backups []meta.Backup) *meta.Backup {
	if s.cfg.Schedule == nil {
		return nil
	}
	every, keep, artifacts := s.cfg.Schedule()
	kept := 0
	var last *meta.Backup
	for i := range backups {
		b := &backups[i]
		if !b.Scheduled {
			continue
		}
		if last == nil {
			last = b
		}
		if b.Status == meta.BackupPending || b.Status == meta.BackupRunning {
			continue
		}
		if kept++; kept > keep {
			if _, err := s.cfg.Commit.Apply(ctx, &meta.BackupDelete{ID: b.ID}); err != nil && !errors.Is(err, meta.ErrNotFound) {
				s.cfg.Log.Warn("deleting a scheduled backup past those kept", "backup", b.ID, "err", err)
			}
		}
	}
	if every <= 0 || (last != nil && s.now().Sub(last.CreatedAt) < every) {
		return nil
	}
	b := meta.Backup{ID: s.cfg.NewID(), Status: meta.BackupPending, Description: "scheduled", IncludeArtifacts: artifacts,
		Scheduled: true, CreatedAt: s.now(), CreatedBy: "schedule"}
	if _, err := s.cfg.Commit.Apply(ctx, &meta.BackupPut{Backup: b, Create: true}); err != nil {
		s.cfg.Log.Warn("asking for the scheduled backup", "err", err)
		return nil
	}
	return &b
}

// finish records how a backup ended (err nil: completed).
func (s *Service) finish(ctx context.Context, b meta.Backup, was string, err error) {
	at := s.now()
	b.FinishedAt = &at
	b.Status = meta.BackupCompleted
	if err != nil {
		b.Status, b.Error = meta.BackupFailed, err.Error()
		s.cfg.Log.Warn("backup failed", "backup", b.ID, "err", err)
	} else {
		s.cfg.Log.Info("backup completed", "backup", b.ID, "bytes", b.SizeBytes, "blobs", b.Progress.Blobs, "index", b.Index)
	}
	if _, cerr := s.cfg.Commit.Apply(context.WithoutCancel(ctx), &meta.BackupPut{Backup: b, Was: was}); cerr != nil {
		s.cfg.Log.Warn("recording a backup's end", "backup", b.ID, "err", cerr)
	}
}

// progressEvery is how often a running backup records its progress.
const progressEvery = 3 * time.Second

// backup writes b's archive into the blob store: the metadata as of now
// (a pinned view: writes go on meanwhile) and, when asked, every blob it
// references, streamed (a file of the metadata aside, nothing is held).
func (s *Service) backup(ctx context.Context, b meta.Backup) {
	at := s.now()
	b.Status, b.StartedAt, b.Node, b.Progress = meta.BackupRunning, &at, s.cfg.Node, &meta.BackupProgress{}
	if _, err := s.cfg.Commit.Apply(ctx, &meta.BackupPut{Backup: b, Was: meta.BackupPending}); err != nil {
		if !errors.Is(err, meta.ErrConflict) && !errors.Is(err, meta.ErrNotFound) {
			s.cfg.Log.Warn("starting a backup", "backup", b.ID, "err", err)
		}
		return // deleted, or taken, meanwhile
	}
	s.cfg.Log.Info("backup started", "backup", b.ID, "include_artifacts", b.IncludeArtifacts)
	err := s.write(ctx, &b)
	if err == nil && s.cfg.Export != nil {
		if dir := s.cfg.Export(); dir != "" {
			if b.Exported, err = s.export(ctx, b, dir); err != nil {
				b.ExportError, err = err.Error(), nil
				s.cfg.Log.Warn("writing a copy of a backup's archive", "backup", b.ID, "dir", dir, "err", b.ExportError)
			}
		}
	}
	s.finish(ctx, b, meta.BackupRunning, err)
}

func (s *Service) write(ctx context.Context, b *meta.Backup) error {
	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return err
	}
	sn, err := s.cfg.Store.BeginSnapshot()
	if err != nil {
		return err
	}
	defer sn.Release()
	tx := sn.Tx()
	f, err := os.CreateTemp(s.cfg.WorkDir, "backup-*.snap")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	size, err := sn.WriteTo(io.MultiWriter(f, h))
	if err != nil {
		return fmt.Errorf("writing the metadata: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	b.Index = tx.Applied()
	hdr := Header{Version: s.cfg.Version, BackupID: b.ID, CreatedAt: b.CreatedAt, Index: b.Index, IncludeArtifacts: b.IncludeArtifacts,
		MetadataSize: size, MetadataSHA256: hex.EncodeToString(h.Sum(nil))}
	// The blobs the metadata keeps (not other backups' archives), counted
	// first: the header says how many follow.
	notBackups := func(k meta.Kind) bool { return k != meta.KindBackup }
	eachBlob := func(fn func(d string) error) error {
		for after := ""; ; {
			page, next := tx.ReferencedBlobsBy(after, 1000, notBackups)
			for _, d := range page {
				if err := fn(d); err != nil {
					return err
				}
			}
			if next == "" {
				return nil
			}
			after = next
		}
	}
	if b.IncludeArtifacts {
		err := eachBlob(func(d string) error {
			size, err := s.cfg.Blobs.Stat(ctx, d)
			if err != nil {
				// Not here: fetched from the peer that has it.
				f, ferr := s.cfg.Blobs.Open(ctx, d)
				if ferr != nil {
					return fmt.Errorf("blob %s, which the metadata references: %w", d, err)
				}
				size = f.Size()
				f.Close()
			}
			hdr.Blobs++
			hdr.BlobBytes += size
			return nil
		})
		if err != nil {
			return err
		}
	}
	b.Progress.BlobsTotal = hdr.Blobs
	b.Progress.Records = int64(countRecords(tx))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := s.archive(ctx, pw, hdr, f, b, eachBlob)
		pw.CloseWithError(err)
		done <- err
	}()
	info, err := s.cfg.Blobs.Put(ctx, pr, blob.PutOptions{})
	pr.CloseWithError(err) // the writer stops if the store did
	if werr := <-done; err == nil && werr != nil {
		err = werr // (the store saw it as its reader's error already)
	}
	if err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	b.SizeBytes, b.Checksum, b.Digest = info.Size, info.Checksums.SHA256, info.Digest
	return nil
}

// archive streams the archive to w, recording progress now and then.
func (s *Service) archive(ctx context.Context, w io.Writer, hdr Header, metadata io.Reader, b *meta.Backup, eachBlob func(func(string) error) error) error {
	aw, err := NewWriter(w, hdr, metadata)
	if err != nil {
		return err
	}
	if b.IncludeArtifacts {
		last := time.Now()
		p := *b.Progress
		err := eachBlob(func(d string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			f, err := s.cfg.Blobs.Open(ctx, d)
			if err != nil {
				return fmt.Errorf("blob %s: %w (collected while the backup ran?)", d, err)
			}
			defer f.Close()
			if err := aw.Blob(d, f.Size(), f); err != nil {
				return err
			}
			p.Blobs++
			p.Bytes += f.Size()
			if time.Since(last) >= progressEvery {
				last = time.Now()
				cp := *b
				cp.Progress = &p
				if _, err := s.cfg.Commit.Apply(ctx, &meta.BackupPut{Backup: cp, Was: meta.BackupRunning}); err != nil {
					return fmt.Errorf("recording progress: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		b.Progress = &p
	}
	return aw.Close()
}

// export copies b's archive into dir, whole or not at all (a file
// written aside, then renamed).
func (s *Service) export(ctx context.Context, b meta.Backup, dir string) (string, error) {
	src, err := s.cfg.Blobs.Open(ctx, b.Digest)
	if err != nil {
		return "", err
	}
	defer src.Close()
	path := filepath.Join(dir, "depot-backup-"+b.ID+".tar.zst")
	tmp, err := os.CreateTemp(dir, ".depot-backup-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

func countRecords(tx *meta.Tx) int {
	n := 0
	for _, k := range meta.Kinds() {
		n += tx.Count(k)
	}
	return n
}
