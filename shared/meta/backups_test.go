package meta

import (
	"errors"
	"testing"
)

// TestBackupRecords: a backup's record moves only from the status its
// writer read; one restore at a time; a backup's archive is a blob kept
// while its record is.
func TestBackupRecords(t *testing.T) {
	s := open(t)
	apply := (&testLog{t: t, s: s}).apply
	if err := apply(&BackupPut{Backup: Backup{ID: "b1", Status: BackupPending}, Create: true}); err != nil {
		t.Fatal(err)
	}
	if err := apply(&BackupPut{Backup: Backup{ID: "b1", Status: BackupPending}, Create: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("created twice: %v", err)
	}
	if err := apply(&BackupPut{Backup: Backup{ID: "b1", Status: BackupRunning}, Was: BackupPending}); err != nil {
		t.Fatal(err)
	}
	if err := apply(&BackupPut{Backup: Backup{ID: "b1", Status: BackupRunning}, Was: BackupPending}); !errors.Is(err, ErrConflict) {
		t.Errorf("taken twice: %v", err)
	}
	if err := apply(&BackupPut{Backup: Backup{ID: "b1", Status: BackupCompleted, Digest: "sha256:ar"}, Was: BackupRunning}); err != nil {
		t.Fatal(err)
	}
	if err := apply(&RestoreStateSet{State: RestoreState{BackupID: "b1", Status: "requested"}, Request: true}); err != nil {
		t.Fatal(err)
	}
	if err := apply(&RestoreStateSet{State: RestoreState{BackupID: "b1", Status: "requested"}, Request: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second restore while one is asked for: %v", err)
	}
	if err := apply(&RestoreStateSet{State: RestoreState{BackupID: "nope", Status: "requested"}, Request: true}); err == nil {
		t.Error("a restore of no backup")
	}
	referenced := func() (yes bool) {
		_ = s.View(func(tx *Tx) error { yes = tx.Referenced("sha256:ar"); return nil })
		return
	}
	if !referenced() {
		t.Error("the archive is not kept")
	}
	if err := apply(&BackupDelete{ID: "b1"}); err != nil || referenced() {
		t.Errorf("after the delete: %v, kept %v", err, referenced())
	}
}
