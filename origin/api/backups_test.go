package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/backup"
)

type backupView struct {
	ID, Status, Description, Checksum, Error string
	SizeBytes                                int64 `json:"size_bytes"`
	IncludeArtifacts                         bool  `json:"include_artifacts"`
}

// waitBackup polls a backup until it is completed or failed.
func waitBackup(t *testing.T, e *origintest.Env, id string) backupView {
	t.Helper()
	var b backupView
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/admin/backups/"+id, e.Admin, nil).Want(200).JSON(&b)
		if b.Status == "completed" || b.Status == "failed" {
			return b
		}
	}
	t.Fatalf("backup %s still %s", id, b.Status)
	return b
}

// waitRestore polls the restore until it ends.
func waitRestore(t *testing.T, e *origintest.Env, token string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := e.Do("GET", "/api/v1/admin/restore", token, nil)
		if r.Status == 401 {
			token = e.Login("admin", origintest.AdminPassword) // the restored sessions are the backup's
			continue
		}
		var st struct{ Restore map[string]any }
		r.Want(200).JSON(&st)
		if s := st.Restore["status"]; s == "completed" || s == "failed" {
			return st.Restore
		}
	}
	t.Fatal("the restore did not end")
	return nil
}

// TestBackupAndRestore: a backup with artifacts is made in the
// background, listed with its size and checksum, downloads as the
// archive it says (every entry checks); restored into the running origin
// after changes, the metadata and the files are as they were, and the
// backups list is kept.
func TestBackupAndRestore(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/tool.bin", e.Admin, "version one").Want(201)

	var b backupView
	e.Do("POST", "/api/v1/admin/backups", e.Admin, map[string]any{"description": "before the change", "include_artifacts": true}).Want(202).JSON(&b)
	if b.Status != "pending" || !b.IncludeArtifacts {
		t.Fatalf("created: %+v", b)
	}
	b = waitBackup(t, e, b.ID)
	if b.Status != "completed" || b.SizeBytes == 0 || len(b.Checksum) != 64 {
		t.Fatalf("finished: %+v", b)
	}
	arch := e.Do("GET", "/api/v1/admin/backups/"+b.ID+"/download", e.Admin, nil).Want(200)
	sum := sha256.Sum256(arch.Body)
	if hex.EncodeToString(sum[:]) != b.Checksum || int64(len(arch.Body)) != b.SizeBytes {
		t.Errorf("the download is not the archive listed")
	}
	hdr, err := backup.Read(bytes.NewReader(arch.Body), backup.Visitor{})
	if err != nil || hdr.Blobs != 1 || hdr.BackupID != b.ID {
		t.Fatalf("the archive: %+v %v", hdr, err)
	}

	// Changes after the backup.
	e.Do("PUT", "/generic/files/tool/2.0/tool.bin", e.Admin, "version two").Want(201)
	e.CreateRepo("later", "generic", true)
	e.Do("DELETE", "/api/v1/repositories/files", e.Admin, nil).Want(204)

	var st map[string]any
	e.Do("POST", "/api/v1/admin/backups/"+b.ID+"/restore", e.Admin, nil).Want(202).JSON(&st)
	if st["status"] != "requested" {
		t.Fatalf("restore asked: %v", st)
	}
	if st = waitRestore(t, e, e.Admin); st["status"] != "completed" {
		t.Fatalf("restore: %v", st)
	}
	// The admin's session is the backup's (it was made before).
	e.Do("GET", "/api/v1/repositories/later", e.Admin, nil).WantError(404, "NOT_FOUND")
	if got := string(e.Do("GET", "/generic/files/tool/1.0/tool.bin", e.Admin, nil).Want(200).Body); got != "version one" {
		t.Errorf("the restored file: %q", got)
	}
	e.Do("GET", "/generic/files/tool/2.0/tool.bin", e.Admin, nil).Want(404)
	var list struct {
		Backups []backupView
		Total   int
	}
	e.Do("GET", "/api/v1/admin/backups", e.Admin, nil).Want(200).JSON(&list)
	if list.Total != 1 || list.Backups[0].ID != b.ID || list.Backups[0].Status != "completed" {
		t.Errorf("the backups after the restore: %+v", list)
	}
	// Writes go on after the restore.
	e.Do("PUT", "/generic/files/tool/3.0/tool.bin", e.Admin, "version three").Want(201)
	e.Do("DELETE", "/api/v1/admin/backups/"+b.ID, e.Admin, nil).Want(204)
	e.Do("GET", "/api/v1/admin/backups/"+b.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
}

// TestMetadataOnlyRestoreSaysWhatIsMissing: a backup of metadata alone,
// restored where its blobs are gone, is refused with the list of the
// missing, and nothing changes; allowed, it goes on.
func TestMetadataOnlyRestoreSaysWhatIsMissing(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/tool.bin", e.Admin, "the bytes").Want(201)
	var b backupView
	e.Do("POST", "/api/v1/admin/backups", e.Admin, map[string]any{"description": "metadata"}).Want(202).JSON(&b)
	if b = waitBackup(t, e, b.ID); b.Status != "completed" {
		t.Fatalf("%+v", b)
	}
	// The file goes, and garbage collection takes its blob.
	e.Do("DELETE", "/generic/files/tool/1.0/tool.bin", e.Admin, nil).Want(204)
	e.Clock.Advance(48 * time.Hour)
	admin := e.Login("admin", origintest.AdminPassword) // the session went with the hours
	e.Do("POST", "/api/v1/admin/cleanup", admin, nil).Want(200)
	e.Do("POST", "/api/v1/repositories", admin, map[string]any{"name": "later", "format": "generic", "public": true}).Want(201)

	e.Do("POST", "/api/v1/admin/backups/"+b.ID+"/restore", admin, nil).Want(202)
	st := waitRestore(t, e, admin)
	missing, _ := st["missing"].([]any)
	if st["status"] != "failed" || st["missing_count"] != float64(1) || len(missing) != 1 {
		t.Fatalf("restore over a store without the blob: %v", st)
	}
	e.Do("GET", "/api/v1/repositories/later", admin, nil).Want(200) // nothing changed
	e.Do("POST", "/api/v1/admin/backups/"+b.ID+"/restore", admin, map[string]any{"allow_missing_blobs": true}).Want(202)
	if st := waitRestore(t, e, admin); st["status"] != "completed" || st["missing_count"] != float64(1) {
		t.Fatalf("allowed: %v", st)
	}
	admin = e.Login("admin", origintest.AdminPassword)
	e.Do("GET", "/api/v1/repositories/later", admin, nil).WantError(404, "NOT_FOUND")
	e.Do("GET", "/generic/files/tool/1.0/tool.bin", admin, nil).Want(404)
}

// TestScheduledBackups: with an interval set, a backup is made when the
// last scheduled one is that old, and only the newest kept remain;
// backups asked for by hand are not counted nor deleted.
func TestScheduledBackups(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	admin := e.Token(e.Admin, []string{"admin"}, nil) // the hours go by: a session would not last
	var hand backupView
	e.Do("POST", "/api/v1/admin/backups", admin, map[string]any{"description": "by hand"}).Want(202).JSON(&hand)
	waitBackup(t, e, hand.ID)
	e.Do("PUT", "/api/v1/admin/settings", admin, map[string]any{"backups.interval_hours": 1, "backups.keep": 2,
		"backups.include_artifacts": false}).Want(200)
	scheduled := func() (n int, done bool) {
		var list struct{ Backups []backupView }
		e.Do("GET", "/api/v1/admin/backups", admin, nil).Want(200).JSON(&list)
		done = true
		for _, b := range list.Backups {
			if b.Description == "scheduled" {
				n++
				done = done && b.Status == "completed" && !b.IncludeArtifacts
			}
		}
		return n, done
	}
	for i, want := range []int{1, 2, 2} {
		if i > 0 {
			e.Clock.Advance(61 * time.Minute)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			n, done := scheduled()
			if n == want && done && (i < 2 || time.Now().After(deadline.Add(-15*time.Second))) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d scheduled backups (done %v), want %d", i, n, done, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	e.Do("GET", "/api/v1/admin/backups/"+hand.ID, admin, nil).Want(200)
}

// TestBackupExport: with backups.export_directory set, the archive is
// also written there, whole; a relative directory is refused.
func TestBackupExport(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	dir := t.TempDir()
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"backups.export_directory": "relative/dir"}).
		WantError(400, "VALIDATION_FAILED").WantField("backups.export_directory")
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"backups.export_directory": dir}).Want(200)
	var b backupView
	e.Do("POST", "/api/v1/admin/backups", e.Admin, map[string]any{"description": "exported"}).Want(202).JSON(&b)
	if b = waitBackup(t, e, b.ID); b.Status != "completed" {
		t.Fatalf("%+v", b)
	}
	var got struct{ Exported, ExportError string }
	e.Do("GET", "/api/v1/admin/backups/"+b.ID, e.Admin, nil).Want(200).JSON(&got)
	raw, err := os.ReadFile(filepath.Join(dir, "depot-backup-"+b.ID+".tar.zst"))
	if err != nil || sha256Hex(raw) != b.Checksum || got.Exported != filepath.Join(dir, "depot-backup-"+b.ID+".tar.zst") {
		t.Errorf("the exported copy: %v %+v", err, got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries", len(entries))
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
