package api

import (
	"net/http"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// backupRequest is POST /admin/backups (the spec's body).
type backupRequest struct {
	Description      string `json:"description"`
	IncludeArtifacts bool   `json:"include_artifacts"`
}

// backupList is GET /admin/backups.
type backupList struct {
	Backups []meta.Backup `json:"backups"`
	Total   int           `json:"total"`
}

// restoreRequest is POST /admin/backups/:id/restore (optional body).
type restoreRequest struct {
	// AllowMissingBlobs restores metadata whose blobs no origin holds
	// (their files answer 404 until uploaded again).
	AllowMissingBlobs bool `json:"allow_missing_blobs,omitempty"`
}

// restoreStatus is GET /admin/restore.
type restoreStatus struct {
	Restore *meta.RestoreState `json:"restore"`
}

func (s *Server) createBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in backupRequest
	if r.ContentLength != 0 {
		if err := decode(r, &in); err != nil {
			return err
		}
	}
	b, idx, err := s.app.CreateBackup(r.Context(), p, app.NewBackup{Description: in.Description, IncludeArtifacts: in.IncludeArtifacts})
	return written(w, idx, err, http.StatusAccepted, b)
}

func (s *Server) listBackups(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	bs, err := s.app.ListBackups(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, backupList{Backups: bs, Total: len(bs)})
}

func (s *Server) getBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	b, err := s.app.GetBackup(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) downloadBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	b, f, err := s.app.OpenBackup(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/zstd")
	h.Set("Content-Disposition", `attachment; filename="depot-backup-`+b.ID+`.tar.zst"`)
	h.Set("Digest", "sha-256="+b.Checksum)
	http.ServeContent(w, r, "", time.Time{}, f)
	return nil
}

func (s *Server) deleteBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteBackup(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}

func (s *Server) restoreBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in restoreRequest
	if r.ContentLength != 0 {
		if err := decode(r, &in); err != nil {
			return err
		}
	}
	st, idx, err := s.app.RequestRestore(r.Context(), p, r.PathValue("id"), in.AllowMissingBlobs)
	return written(w, idx, err, http.StatusAccepted, st)
}

func (s *Server) restoreState(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, err := s.app.RestoreStatus(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, restoreStatus{Restore: st})
}
