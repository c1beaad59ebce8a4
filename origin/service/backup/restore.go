package backup

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// restoreGap is how far past the log's last index a restored state is
// stamped: entries committed while the restore is prepared (heartbeats,
// logins) must not carry a later index than the restored records, or an
// edge would keep what it holds of them instead of the restored value.
const restoreGap = 1 << 20

// restore restores a backup into the running cluster: the whole archive
// is checked first (nothing changes for a corrupt or truncated one), then
// its blobs are put into the blob store (each checked against its
// digest), then, for an archive of metadata alone, every blob the
// metadata references is looked for, and the restore refused with the
// list of those missing unless allowed; last the metadata, stamped past
// the log's end, becomes the cluster's through the consensus log. The
// backups themselves are kept as they are now, not as the archive had
// them.
func (s *Service) restore(ctx context.Context, st meta.RestoreState) {
	st.Status = "running"
	if _, err := s.cfg.Commit.Apply(ctx, &meta.RestoreStateSet{State: st}); err != nil {
		s.cfg.Log.Warn("starting a restore", "backup", st.BackupID, "err", err)
		return
	}
	s.cfg.Log.Info("restore started", "backup", st.BackupID)
	err := s.restoreFrom(ctx, &st)
	s.restoreDone(ctx, st, err)
}

// restoreDone records how a restore ended (err nil: completed).
func (s *Service) restoreDone(ctx context.Context, st meta.RestoreState, err error) {
	at := s.now()
	st.FinishedAt, st.Status, st.Error = &at, "completed", ""
	if err != nil {
		st.Status, st.Error = "failed", err.Error()
		s.cfg.Log.Warn("restore failed", "backup", st.BackupID, "err", err)
	} else {
		s.cfg.Log.Info("restore completed", "backup", st.BackupID)
	}
	if _, cerr := s.cfg.Commit.Apply(context.WithoutCancel(ctx), &meta.RestoreStateSet{State: st}); cerr != nil {
		s.cfg.Log.Warn("recording a restore's end", "backup", st.BackupID, "err", cerr)
	}
}

func (s *Service) restoreFrom(ctx context.Context, st *meta.RestoreState) error {
	var b *meta.Backup
	if err := s.cfg.Store.View(func(tx *meta.Tx) error { var err error; b, err = tx.Backup(st.BackupID); return err }); err != nil {
		return err
	}
	if b.Status != meta.BackupCompleted || b.Digest == "" {
		return fmt.Errorf("backup %s is %s: only a completed backup can be restored", b.ID, b.Status)
	}
	open := func() (io.ReadCloser, error) { return s.cfg.Blobs.Open(ctx, b.Digest) }
	return s.Apply(ctx, open, st)
}

// Apply restores the archive open reads (opened once to check it, once
// to restore it) as st asks, filling st's list of missing blobs when
// that is why it is refused. The offline restore of a fresh origin comes
// here too, at its first start.
func (s *Service) Apply(ctx context.Context, open func() (io.ReadCloser, error), st *meta.RestoreState) error {
	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return err
	}
	// Check the whole archive before anything changes.
	rc, err := open()
	if err != nil {
		return err
	}
	hdr, err := Read(rc, Visitor{})
	rc.Close()
	if err != nil {
		return err
	}
	// Its blobs, into the store; its metadata, aside.
	snap, err := os.CreateTemp(s.cfg.WorkDir, "restore-*.snap")
	if err != nil {
		return err
	}
	defer os.Remove(snap.Name())
	defer snap.Close()
	if rc, err = open(); err != nil {
		return err
	}
	_, err = Read(rc, Visitor{
		Metadata: func(r io.Reader) error { _, err := io.Copy(snap, r); return err },
		Blob: func(digest string, size int64, r io.Reader) error {
			if _, err := s.cfg.Blobs.Stat(ctx, digest); err == nil {
				return nil // here already (the reader checks the bytes skipped)
			}
			want, err := blob.DigestChecksums(digest)
			if err != nil {
				return err
			}
			_, err = s.cfg.Blobs.Put(ctx, r, blob.PutOptions{Expect: want})
			return err
		},
	})
	rc.Close()
	if err != nil {
		return err
	}
	return s.install(ctx, snap, hdr.IncludeArtifacts, st)
}

// install makes the metadata snapshot snap the cluster's, rebased past
// the log's end, the backups as they are; for metadata backed up without
// its blobs, it first looks for every blob the metadata references.
func (s *Service) install(ctx context.Context, snap io.ReadSeeker, withBlobs bool, st *meta.RestoreState) error {
	rebased, err := os.CreateTemp(s.cfg.WorkDir, "restore-*.rebased")
	if err != nil {
		return err
	}
	defer os.Remove(rebased.Name())
	defer rebased.Close()
	if _, err := snap.Seek(0, io.SeekStart); err != nil {
		return err
	}
	at := s.cfg.LastIndex() + restoreGap
	var digests []string
	seen := map[string]bool{}
	err = s.cfg.Store.View(func(tx *meta.Tx) error {
		return meta.Rebase(rebased, snap, at, tx, []meta.Kind{meta.KindBackup}, func(d string) {
			if d != "" && !seen[d] && !withBlobs {
				seen[d] = true
				digests = append(digests, d)
			}
		})
	})
	if err != nil {
		return fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	seen = nil
	if missing := s.missing(ctx, digests); len(missing) > 0 {
		st.MissingCount = len(missing)
		st.Missing = missing[:min(len(missing), meta.MaxMissingListed)]
		if !st.AllowMissingBlobs {
			return fmt.Errorf("the backup holds metadata alone, and %d blobs it references are in no origin's store (listed in missing); "+
				"restore a backup with artifacts, or restore with allow_missing_blobs (their files answer 404 until uploaded again)", len(missing))
		}
	}
	size, err := rebased.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = rebased.Seek(0, io.SeekStart)
	}
	if err != nil {
		return err
	}
	if err := s.cfg.Restore(at, size, rebased); err != nil {
		return fmt.Errorf("installing the metadata: %w", err)
	}
	return nil
}

// missing lists the digests no origin's store holds.
func (s *Service) missing(ctx context.Context, digests []string) []string {
	var out []string
	for _, d := range digests {
		if _, err := s.cfg.Blobs.Stat(ctx, d); err == nil {
			continue
		}
		f, err := s.cfg.Blobs.Open(ctx, d) // fetched from a peer when one has it
		if err != nil {
			out = append(out, d)
			continue
		}
		f.Close()
	}
	return out
}
