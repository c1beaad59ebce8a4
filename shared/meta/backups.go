package meta

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Backups: one record per backup (its archive is a blob of the cluster,
// kept as long as the record), and the state of the last restore. The
// origin's backup service writes them; edges never need them.

const (
	KindBackup      Kind    = 16
	CmdBackupPut    CmdType = 44
	CmdBackupDelete CmdType = 45
	CmdRestoreState CmdType = 46
)

func init() {
	declareKind(KindBackup, kindDecl{Name: "backups", Bucket: "backups", Index: indexBlob(KindBackup, func(r *Backup) string { return r.Digest }), Unfed: true})
	declareCommand(CmdBackupPut, func() Command { return new(BackupPut) })
	declareCommand(CmdBackupDelete, func() Command { return new(BackupDelete) })
	declareCommand(CmdRestoreState, func() Command { return new(RestoreStateSet) })
}

// Backup statuses.
const (
	BackupPending   = "pending"
	BackupRunning   = "running"
	BackupCompleted = "completed"
	BackupFailed    = "failed"
)

// Backup is one backup and, once completed, its archive.
type Backup struct {
	ID               string     `json:"id"`
	Status           string     `json:"status"`
	Description      string     `json:"description"`
	IncludeArtifacts bool       `json:"include_artifacts"`
	Scheduled        bool       `json:"scheduled,omitempty"` // made by the schedule, kept by its retention
	CreatedAt        time.Time  `json:"created_at"`
	CreatedBy        string     `json:"created_by,omitempty"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	// Node is the origin that ran it.
	Node string `json:"node,omitempty"`
	// SizeBytes and Checksum (SHA-256, hex) are the archive's; Digest its
	// blob address.
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum,omitempty"`
	Digest    string `json:"digest,omitempty"`
	// Index is the log index of the metadata it holds.
	Index    uint64          `json:"index,omitempty"`
	Progress *BackupProgress `json:"progress,omitempty"`
	Error    string          `json:"error,omitempty"`
	// Exported is where a copy of the archive was written
	// (backups.export_directory), on Node; ExportError why it was not.
	Exported    string `json:"exported,omitempty"`
	ExportError string `json:"export_error,omitempty"`
}

// BackupProgress is how far a backup (or its counts, once done) got.
type BackupProgress struct {
	Records    int64 `json:"records"`
	Blobs      int64 `json:"blobs"`
	BlobsTotal int64 `json:"blobs_total"`
	Bytes      int64 `json:"bytes"` // of blobs written
}

// BackupPut creates a backup (Create: refused when the id exists) or
// replaces its record (refused when it is gone, or no longer at Was, the
// status the writer read: a backup failed by another node stays failed).
type BackupPut struct {
	Backup Backup `json:"backup"`
	Create bool   `json:"create,omitempty"`
	Was    string `json:"was,omitempty"`
}

func (*BackupPut) Type() CmdType { return CmdBackupPut }
func (*BackupPut) Scope() string { return "" }

func (c *BackupPut) apply(tx *Tx) error {
	b := c.Backup
	if b.ID == "" || len(b.Description) > MaxBackupDescription {
		return Invalidf("a backup needs an id and a description of at most %d bytes", MaxBackupDescription)
	}
	old, err := tx.Backup(b.ID)
	switch {
	case c.Create && err == nil:
		return Conflictf("backup %s exists", b.ID)
	case !c.Create && err != nil:
		return err
	case !c.Create && old.Status != c.Was:
		return Conflictf("backup %s is %s, not %s", b.ID, old.Status, c.Was)
	}
	return tx.putRec(KindBackup, b.ID, b)
}

// MaxBackupDescription bounds a backup's description, in bytes.
const MaxBackupDescription = 1 << 10

// BackupDelete forgets a backup; its archive goes with the next garbage
// collection.
type BackupDelete struct {
	ID string `json:"id"`
}

func (*BackupDelete) Type() CmdType { return CmdBackupDelete }
func (*BackupDelete) Scope() string { return "" }

func (c *BackupDelete) apply(tx *Tx) error {
	if _, err := tx.Backup(c.ID); err != nil {
		return err
	}
	return tx.delRec(KindBackup, c.ID)
}

// Backup reads one backup.
func (tx *Tx) Backup(id string) (*Backup, error) { return getRec[Backup](tx, KindBackup, id, "backup") }

// Backups lists the backups, newest first.
func (tx *Tx) Backups() ([]Backup, error) {
	out, err := listRecs[Backup](tx, KindBackup, "")
	slices.SortFunc(out, func(a, b Backup) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, err
}

// RestoreState is the restore in progress or last finished.
type RestoreState struct {
	BackupID    string     `json:"backup_id"`
	Status      string     `json:"status"` // requested, running, completed, failed
	RequestedBy string     `json:"requested_by,omitempty"`
	RequestedAt time.Time  `json:"requested_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	// AllowMissingBlobs: a restore of metadata whose blobs the store
	// lacks goes on (those files answer 404 until uploaded again).
	AllowMissingBlobs bool   `json:"allow_missing_blobs,omitempty"`
	Error             string `json:"error,omitempty"`
	// Missing lists blobs the metadata names that no origin holds (at most
	// MaxMissingListed), MissingCount how many in all.
	Missing      []string `json:"missing,omitempty"`
	MissingCount int      `json:"missing_count,omitempty"`
}

// MaxMissingListed bounds RestoreState.Missing.
const MaxMissingListed = 100

const stateRestore = "restore"

// RestoreStateSet records a restore's state; with Request, it is a new
// restore, refused while another is requested or running.
type RestoreStateSet struct {
	State   RestoreState `json:"state"`
	Request bool         `json:"request,omitempty"`
}

func (*RestoreStateSet) Type() CmdType { return CmdRestoreState }
func (*RestoreStateSet) Scope() string { return "" }

func (c *RestoreStateSet) apply(tx *Tx) error {
	if c.Request {
		if cur := tx.Restore(); cur != nil && (cur.Status == "requested" || cur.Status == "running") {
			return Conflictf("a restore of backup %s is %s", cur.BackupID, cur.Status)
		}
		if _, err := tx.Backup(c.State.BackupID); err != nil {
			return err
		}
	}
	if len(c.State.Missing) > MaxMissingListed {
		return Invalidf("at most %d missing blobs listed", MaxMissingListed)
	}
	return tx.putRec(KindState, stateRestore, c.State)
}

// Restore is the restore in progress or last finished (nil: none).
func (tx *Tx) Restore() *RestoreState {
	raw, _ := tx.lookup(Space(KindState), stateRestore)
	var r RestoreState
	if raw == nil || json.Unmarshal(raw, &r) != nil {
		return nil
	}
	return &r
}

// Rebase writes the snapshot stream r again as the state of log index
// at, for restoring a backup into a running cluster: every record is
// stamped at (so that it replaces what nodes and edges hold, whatever
// index they hold it at), no tombstone is kept and the change feed's
// horizon is at (so edges read everything again); the records of the
// kinds in keep are not taken from r but from tx (the backups, which a
// restore must not forget). It answers the digests the records of r
// reference (artifacts and their refs), for checking that their blobs are
// there, through blobs.
func Rebase(w io.Writer, r io.Reader, at uint64, tx *Tx, keep []Kind, blobs func(digest string)) error {
	if _, err := w.Write(snapMagic); err != nil {
		return err
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zw, 64<<10)
	stamp := u64(at)
	err = ReadSnapshot(r, func(k Kind, _ uint64, key string, body []byte) error {
		if slices.Contains(keep, k) {
			return nil
		}
		if k == KindArtifact && blobs != nil {
			var a Artifact
			if err := json.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("artifact %s: %w", key, err)
			}
			blobs(a.Digest)
			for _, d := range a.Refs {
				blobs(d)
			}
		}
		return writeFrame(bw, frameRecord, []byte{byte(k)}, stamp, []byte(key), body)
	})
	for _, k := range keep {
		if err != nil {
			break
		}
		err = tx.space(Space(k)).ForEach(func(id, v []byte) error {
			return writeFrame(bw, frameRecord, []byte{byte(k)}, stamp, id, v[8:])
		})
	}
	if err == nil {
		err = writeFrame(bw, frameEnd, stamp, stamp)
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadSnapshot reads a snapshot stream to its end frame, calling fn with
// each record (its kind, modify index, key and body); a stream that ends
// early or is malformed is an error.
func ReadSnapshot(r io.Reader, fn func(k Kind, index uint64, key string, body []byte) error) error {
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != string(snapMagic) {
		return fmt.Errorf("not a Depot metadata snapshot")
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return err
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 64<<10)
	for {
		typ, f, err := readFrame(br)
		if err != nil {
			return err
		}
		switch typ {
		case frameRecord:
			if _, ok := kinds[Kind(f[0][0])]; !ok {
				return fmt.Errorf("a record of unknown kind %d", f[0][0])
			}
			if err := fn(Kind(f[0][0]), getU64(f[1]), string(f[2]), f[3]); err != nil {
				return err
			}
		case frameEnd:
			return nil
		}
	}
}
