package app

import (
	"context"
	"errors"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// BackupJobs is the leader's backup service, woken when there is work.
type BackupJobs interface{ Wake() }

// NewBackup is a backup as asked for.
type NewBackup struct {
	Description      string
	IncludeArtifacts bool
}

func (a *App) wakeBackups() {
	if a.BackupJobs != nil {
		a.BackupJobs.Wake()
	}
}

// CreateBackup asks for a backup (admin only): it is pending until the
// leader's backup service runs it, in the background.
func (a *App) CreateBackup(ctx context.Context, p *auth.Principal, in NewBackup) (*meta.Backup, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if len(in.Description) > meta.MaxBackupDescription {
		return nil, 0, apierr.Invalid("description", "description is longer than %d bytes", meta.MaxBackupDescription)
	}
	b := meta.Backup{ID: a.NewID(), Status: meta.BackupPending, Description: in.Description, IncludeArtifacts: in.IncludeArtifacts,
		CreatedAt: a.now(), CreatedBy: p.Username}
	idx, err := a.commit(ctx, &meta.BackupPut{Backup: b, Create: true})
	if err != nil {
		return nil, idx, err
	}
	a.wakeBackups()
	return &b, idx, nil
}

// ListBackups lists the backups, newest first (admin only).
func (a *App) ListBackups(_ context.Context, p *auth.Principal) ([]meta.Backup, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var out []meta.Backup
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.Backups(); return err })
	if out == nil {
		out = []meta.Backup{}
	}
	return out, err
}

// GetBackup reads one backup (admin only).
func (a *App) GetBackup(_ context.Context, p *auth.Principal, id string) (*meta.Backup, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var out *meta.Backup
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.Backup(id); return err })
	return out, err
}

// OpenBackup opens a completed backup's archive for download (admin
// only), from this origin's store or a peer's.
func (a *App) OpenBackup(ctx context.Context, p *auth.Principal, id string) (*meta.Backup, blob.File, error) {
	b, err := a.GetBackup(ctx, p, id)
	if err != nil {
		return nil, nil, err
	}
	if b.Status != meta.BackupCompleted {
		return nil, nil, apierr.New(apierr.Conflict, "backup %s is %s: its archive is there once it is completed", id, b.Status)
	}
	f, err := a.Blobs.Open(ctx, b.Digest)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil, apierr.New(apierr.NotFound, "the archive of backup %s is in no origin's store", id)
	}
	return b, f, err
}

// DeleteBackup forgets a backup; its archive goes with the next garbage
// collection (admin only; not while it runs).
func (a *App) DeleteBackup(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	b, err := a.GetBackup(ctx, p, id)
	if err != nil {
		return 0, err
	}
	if b.Status == meta.BackupRunning {
		return 0, apierr.New(apierr.Conflict, "backup %s is running; delete it once it ends", id)
	}
	return a.commit(ctx, &meta.BackupDelete{ID: id})
}

// RequestRestore asks the leader's backup service to restore a backup
// into the running cluster (admin only; one restore at a time).
func (a *App) RequestRestore(ctx context.Context, p *auth.Principal, id string, allowMissingBlobs bool) (*meta.RestoreState, uint64, error) {
	b, err := a.GetBackup(ctx, p, id)
	if err != nil {
		return nil, 0, err
	}
	if b.Status != meta.BackupCompleted {
		return nil, 0, apierr.New(apierr.Conflict, "backup %s is %s: only a completed backup can be restored", id, b.Status)
	}
	st := meta.RestoreState{BackupID: id, Status: "requested", RequestedBy: p.Username, RequestedAt: a.now(), AllowMissingBlobs: allowMissingBlobs}
	idx, err := a.commit(ctx, &meta.RestoreStateSet{State: st, Request: true})
	if err != nil {
		return nil, idx, err
	}
	a.wakeBackups()
	return &st, idx, nil
}

// RestoreStatus is the restore in progress or last finished (nil: none;
// admin only).
func (a *App) RestoreStatus(_ context.Context, p *auth.Principal) (*meta.RestoreState, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var out *meta.RestoreState
	err := a.view(func(tx *meta.Tx) error { out = tx.Restore(); return nil })
	return out, err
}
