package origin_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/backup"
)

// TestPrepareRestore: depot admin restore's unpacking refuses a truncated
// archive and leaves no directory behind, refuses a directory that holds
// anything, and unpacks a whole archive (files and the metadata for the
// first start).
func TestPrepareRestore(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "kept bytes").Want(201)
	var b struct{ ID, Status string }
	e.Do("POST", "/api/v1/admin/backups", e.Admin, map[string]any{"include_artifacts": true}).Want(202).JSON(&b)
	for deadline := time.Now().Add(30 * time.Second); b.Status != "completed" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/admin/backups/"+b.ID, e.Admin, nil).Want(200).JSON(&b)
	}
	raw := e.Do("GET", "/api/v1/admin/backups/"+b.ID+"/download", e.Admin, nil).Want(200).Body
	work := t.TempDir()
	whole, cut := filepath.Join(work, "whole.tar.zst"), filepath.Join(work, "cut.tar.zst")
	if err := os.WriteFile(whole, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, raw[:len(raw)*3/4], 0o600); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(work, "restored")
	if _, err := origin.PrepareRestore(t.Context(), cut, dir, false, nil); !errors.Is(err, backup.ErrCorrupt) {
		t.Fatalf("a truncated archive: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore left %s: %v", dir, err)
	}
	p, err := origin.PrepareRestore(t.Context(), whole, dir, false, nil)
	if err != nil || p.Header.BackupID != b.ID || p.Blobs != 1 || !backup.HasPending(dir) {
		t.Fatalf("the whole archive: %+v %v", p, err)
	}
	if _, err := origin.PrepareRestore(t.Context(), whole, dir, false, nil); err == nil {
		t.Fatal("a directory that holds a restore was restored into again")
	}
}
