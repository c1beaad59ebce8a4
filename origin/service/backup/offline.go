package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// An origin is restored offline in two steps: Prepare (depot admin
// restore) checks an archive and unpacks it into a fresh data directory,
// its blobs into the blob store and its metadata aside with a note; the
// origin's first start then finds the note (RestorePending) and installs
// the metadata through its new raft log, as a restore into a running
// cluster does, before anything else is written.

// pendingDir is where Prepare leaves the metadata and its note.
const pendingDir = "restore-pending"

// pending is the note.
type pending struct {
	BackupID          string `json:"backup_id"`
	IncludeArtifacts  bool   `json:"include_artifacts"`
	AllowMissingBlobs bool   `json:"allow_missing_blobs"`
	Index             uint64 `json:"index"`
}

// Prepared says what Prepare unpacked.
type Prepared struct {
	Header Header
	Blobs  int64
	Bytes  int64
}

// Prepare checks the archive open reads (opened twice: checked whole,
// then unpacked) and unpacks it into the fresh data directory dir, its
// blobs into blobs (dir's blob store). progress, when set, is told of
// each blob written. Nothing is left in dir when it fails.
func Prepare(ctx context.Context, open func() (io.ReadCloser, error), dir string, blobs blob.Putter, allowMissing bool,
	progress func(blobs, bytes int64)) (Prepared, error) {
	var out Prepared
	rc, err := open()
	if err != nil {
		return out, err
	}
	out.Header, err = Read(rc, Visitor{})
	rc.Close()
	if err != nil {
		return out, err
	}
	if !out.Header.IncludeArtifacts && !allowMissing {
		return out, errors.New("the archive holds metadata alone, and a fresh data directory has none of its files: " +
			"restore a backup made with include_artifacts, or allow the missing blobs (--allow-missing-blobs; their files answer 404 until uploaded again)")
	}
	pd := filepath.Join(dir, pendingDir)
	if err := os.MkdirAll(pd, 0o700); err != nil {
		return out, err
	}
	snap, err := os.Create(filepath.Join(pd, "metadata.snap"))
	if err != nil {
		return out, err
	}
	defer snap.Close()
	if rc, err = open(); err != nil {
		return out, err
	}
	_, err = Read(rc, Visitor{
		Metadata: func(r io.Reader) error { _, err := io.Copy(snap, r); return err },
		Blob: func(digest string, size int64, r io.Reader) error {
			want, err := blob.DigestChecksums(digest)
			if err != nil {
				return err
			}
			if _, err := blobs.Put(ctx, r, blob.PutOptions{Expect: want}); err != nil {
				return err
			}
			out.Blobs++
			out.Bytes += size
			if progress != nil {
				progress(out.Blobs, out.Bytes)
			}
			return nil
		},
	})
	rc.Close()
	if err == nil {
		err = snap.Sync()
	}
	if err != nil {
		return out, err
	}
	note, _ := json.Marshal(pending{BackupID: out.Header.BackupID, IncludeArtifacts: out.Header.IncludeArtifacts,
		AllowMissingBlobs: allowMissing, Index: out.Header.Index})
	return out, os.WriteFile(filepath.Join(pd, "pending.json"), note, 0o600)
}

// HasPending reports whether dir holds a restore prepared for the
// origin's first start.
func HasPending(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, pendingDir, "pending.json"))
	return err == nil
}

// RestorePending installs the metadata Prepare left in dir (the origin
// leading its new cluster), then removes it. It answers the backup's id.
func (s *Service) RestorePending(ctx context.Context, dir string) (string, error) {
	pd := filepath.Join(dir, pendingDir)
	raw, err := os.ReadFile(filepath.Join(pd, "pending.json"))
	if err != nil {
		return "", err
	}
	var p pending
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(pd, "pending.json"), err)
	}
	snap, err := os.Open(filepath.Join(pd, "metadata.snap"))
	if err != nil {
		return "", err
	}
	defer snap.Close()
	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return "", err
	}
	st := meta.RestoreState{BackupID: p.BackupID, Status: "running", RequestedBy: "depot admin restore", RequestedAt: s.now(),
		AllowMissingBlobs: p.AllowMissingBlobs}
	err = s.install(ctx, snap, p.IncludeArtifacts, &st)
	s.restoreDone(ctx, st, err)
	if err != nil {
		return p.BackupID, err
	}
	return p.BackupID, os.RemoveAll(pd)
}
