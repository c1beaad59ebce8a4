package webui

import (
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// The backups page (administrators): the backups with their status and
// progress (the page refreshes itself while one runs), a form to make
// one, and per completed backup its download, its restore and its
// deletion; the restore in progress or last finished.

const backupsPath = Prefix + "/backups"

type backupsPage struct {
	Backups     []meta.Backup
	Restore     *meta.RestoreState
	Description string
	Artifacts   bool
	Busy        bool // a backup or a restore runs: the page refreshes
	Err, Field  string
}

func (p backupsPage) formError() string { return p.Err }

func (u *UI) backupsList(w http.ResponseWriter, c *call, status int, p backupsPage) error {
	var err error
	if p.Backups, err = u.d.App.ListBackups(c.r.Context(), c.p); err != nil {
		return err
	}
	if p.Restore, err = u.d.App.RestoreStatus(c.r.Context(), c.p); err != nil {
		return err
	}
	for _, b := range p.Backups {
		p.Busy = p.Busy || b.Status == meta.BackupPending || b.Status == meta.BackupRunning
	}
	p.Busy = p.Busy || p.Restore != nil && (p.Restore.Status == "requested" || p.Restore.Status == "running")
	if p.Busy {
		w.Header().Set("Refresh", "3")
	}
	return u.render(w, c, status, "backups", "Backups", p)
}

func (u *UI) backups(w http.ResponseWriter, c *call) error {
	return u.backupsList(w, c, 0, backupsPage{Artifacts: true})
}

func (u *UI) createBackup(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	p := backupsPage{Description: strings.TrimSpace(f.Get("description")), Artifacts: f.Get("include_artifacts") == "on"}
	b, _, err := u.d.App.CreateBackup(c.r.Context(), c.p, app.NewBackup{Description: p.Description, IncludeArtifacts: p.Artifacts})
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.backupsList(w, c, e.Status(), p)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Backup "+b.ID+" started: it runs in the background on the cluster's leader.")
	http.Redirect(w, c.r, backupsPath, http.StatusSeeOther)
	return nil
}

func (u *UI) downloadBackup(w http.ResponseWriter, c *call) error {
	b, f, err := u.d.App.OpenBackup(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/zstd")
	w.Header().Set("Content-Disposition", `attachment; filename="depot-backup-`+b.ID+`.tar.zst"`)
	http.ServeContent(w, c.r, "", time.Time{}, f)
	return nil
}

func (u *UI) deleteBackup(w http.ResponseWriter, c *call) error {
	id := c.r.PathValue("id")
	_, err := u.d.App.DeleteBackup(c.r.Context(), c.p, id)
	return u.after(w, c, err, "Backup "+id+" deleted.", backupsPath)
}

func (u *UI) restoreBackup(w http.ResponseWriter, c *call) error {
	id := c.r.PathValue("id")
	_, _, err := u.d.App.RequestRestore(c.r.Context(), c.p, id, c.r.PostForm.Get("allow_missing_blobs") == "on")
	return u.after(w, c, err, "Restore of backup "+id+" started. Sessions made since the backup end with it: sign in again when it completes.", backupsPath)
}
