package meta

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Migrations: one record per migration from another registry (its
// source, what it moves, its status and progress), and its log lines
// and failures as entries of their own, appended in batches and bounded
// per migration. The origin's migration service writes them; edges never
// need them.

const (
	KindMigration       Kind    = 30
	KindMigrationEntry  Kind    = 31
	CmdMigrationPut     CmdType = 56
	CmdMigrationEntries CmdType = 57
)

func init() {
	declareKind(KindMigration, kindDecl{Name: "migrations", Bucket: "migrations", Unfed: true})
	declareKind(KindMigrationEntry, kindDecl{Name: "migration entries", Bucket: "migration_entries", Unfed: true})
	declareCommand(CmdMigrationPut, func() Command { return new(MigrationPut) })
	declareCommand(CmdMigrationEntries, func() Command { return new(MigrationEntries) })
}

// Migration statuses. pending (made, not started) → in_progress →
// completed, completed_with_errors (some files failed) or failed (the
// source could not be read on); in_progress → interrupted (its origin
// stopped leading or stopped) → in_progress again when resumed;
// pending, in_progress or interrupted → cancelled.
const (
	MigrationPending             = "pending"
	MigrationInProgress          = "in_progress"
	MigrationInterrupted         = "interrupted"
	MigrationCompleted           = "completed"
	MigrationCompletedWithErrors = "completed_with_errors"
	MigrationFailed              = "failed"
	MigrationCancelled           = "cancelled"
)

// MigrationDone reports whether a status is a final one.
func MigrationDone(status string) bool {
	return status == MigrationCompleted || status == MigrationCompletedWithErrors || status == MigrationFailed || status == MigrationCancelled
}

// Migration is one migration from another registry.
type Migration struct {
	ID     string          `json:"migration_id"`
	Status string          `json:"status"`
	Source MigrationSource `json:"source"`
	// Repositories are the source's repositories to move, Targets the
	// name each gets here (by the source's name; absent: the same).
	Repositories []string          `json:"repositories"`
	Targets      map[string]string `json:"repository_map,omitempty"`
	Options      MigrationOptions  `json:"options"`
	CreatedAt    time.Time         `json:"created_at"`
	CreatedBy    string            `json:"created_by"`
	// CreatedByID is the administrator the migration writes as.
	CreatedByID         string            `json:"-"`
	StartedAt           *time.Time        `json:"started_at,omitempty"`
	FinishedAt          *time.Time        `json:"finished_at,omitempty"`
	EstimatedCompletion *time.Time        `json:"estimated_completion,omitempty"`
	Progress            MigrationProgress `json:"progress"`
	// Done are the source repositories moved completely, Base the
	// progress when the last of them was (a repository resumed counts
	// from there again).
	Done []string           `json:"repositories_done,omitempty"`
	Base *MigrationProgress `json:"progress_before_repository,omitempty"`
	// Permissions says what became of the source's users, groups and
	// permission targets.
	Permissions string `json:"permission_migration,omitempty"`
	// Node is the origin running it.
	Node  string `json:"node,omitempty"`
	Error string `json:"error,omitempty"`
}

// MigrationSource is where a migration reads from. The password (or
// token) is kept to run and resume the job and never answered.
type MigrationSource struct {
	Type     string `json:"type"`
	URL      string `json:"url"`
	Username string `json:"username,omitempty"`
	Password string `json:"-"` // kept as the record's secret
}

// MigrationOptions are a migration's settings.
type MigrationOptions struct {
	IncludeMetadata    bool `json:"include_metadata"`
	IncludePermissions bool `json:"include_permissions"`
	ValidateChecksums  bool `json:"validate_checksums"`
	ParallelTransfers  int  `json:"parallel_transfers"`
	BatchSize          int  `json:"batch_size"`
	RetryAttempts      int  `json:"retry_attempts"`
	TimeoutSeconds     int  `json:"timeout_seconds"`
	DryRun             bool `json:"dry_run,omitempty"`
}

// MigrationProgress is how far a migration got.
type MigrationProgress struct {
	TotalArtifacts    int64   `json:"total_artifacts"`
	MigratedArtifacts int64   `json:"migrated_artifacts"`
	FailedArtifacts   int64   `json:"failed_artifacts"`
	SkippedArtifacts  int64   `json:"skipped_artifacts"`
	Bytes             int64   `json:"bytes"`
	CurrentRepository string  `json:"current_repository"`
	PercentComplete   float64 `json:"percentage_complete"`
	// Verified counts the files whose checksum matched the source's.
	Verified int64 `json:"checksums_verified"`
	// WithProperties counts the artifacts whose properties were carried
	// over; PropertiesDropped the properties out of bounds here.
	WithProperties    int64 `json:"artifacts_with_properties"`
	PropertiesDropped int64 `json:"properties_dropped"`
}

// Bounds.
const (
	MaxMigrationRepositories = 1000
	MaxMigrationEntries      = 10000
	maxMigrationText         = 2048
)

// MigrationPut creates a migration (Create: refused when the id exists)
// or replaces its record (refused when it is gone or no longer at Was,
// the status the writer read: a migration another node interrupted or
// an administrator cancelled stays so).
type MigrationPut struct {
	Migration Migration `json:"migration"`
	Create    bool      `json:"create,omitempty"`
	Was       string    `json:"was,omitempty"`
	// Secret carries the source's password and the creator's id, which
	// the record's JSON answers never show.
	Secret *migrationSecret `json:"secret,omitempty"`
}

// migrationSecret is what a record keeps that the API never answers.
type migrationSecret struct {
	Password    string `json:"password,omitempty"`
	CreatedByID string `json:"created_by_id,omitempty"`
}

// storedMigration is the record as stored: the answer's fields and the
// secret.
type storedMigration struct {
	Migration
	Secret  migrationSecret `json:"secret"`
	Entries int             `json:"entries_kept"`
	Dropped int             `json:"entries_dropped"`
}

func (*MigrationPut) Type() CmdType { return CmdMigrationPut }
func (*MigrationPut) Scope() string { return "" }

// NewMigrationPut is the command that stores m, secrets included.
func NewMigrationPut(m Migration, create bool, was string) *MigrationPut {
	secret := &migrationSecret{Password: m.Source.Password, CreatedByID: m.CreatedByID}
	m.Source.Password, m.CreatedByID = "", ""
	return &MigrationPut{Migration: m, Create: create, Was: was, Secret: secret}
}

func (c *MigrationPut) apply(tx *Tx) error {
	m := c.Migration
	switch {
	case m.ID == "" || len(m.Repositories) == 0 || len(m.Repositories) > MaxMigrationRepositories:
		return Invalidf("a migration needs an id and 1 to %d repositories", MaxMigrationRepositories)
	case len(m.Source.URL) > maxMigrationText || len(m.Error) > maxMigrationText || len(m.Source.Username) > 256:
		return Invalidf("a migration's source URL and error are at most %d bytes", maxMigrationText)
	}
	old, err := getRec[storedMigration](tx, KindMigration, m.ID, "migration")
	switch {
	case c.Create && err == nil:
		return Conflictf("migration %s exists", m.ID)
	case !c.Create && err != nil:
		return err
	case !c.Create && old.Status != c.Was:
		return Conflictf("migration %s is %s, not %s", m.ID, old.Status, c.Was)
	}
	rec := storedMigration{Migration: m}
	rec.Source.Password = ""
	if old != nil { // the secret unless given again; the entries' command keeps their counts
		rec.Secret, rec.Entries, rec.Dropped = old.Secret, old.Entries, old.Dropped
	}
	if c.Secret != nil {
		rec.Secret = *c.Secret
	}
	return tx.putRec(KindMigration, m.ID, rec)
}

// MigrationEntry is a log line or a failed file of a migration.
type MigrationEntry struct {
	Seq        int       `json:"seq"`
	At         time.Time `json:"at"`
	Kind       string    `json:"kind"` // log, failure
	Level      string    `json:"level,omitempty"`
	Message    string    `json:"message"`
	Repository string    `json:"repository,omitempty"`
	Path       string    `json:"path,omitempty"`
	Size       int64     `json:"size,omitempty"`
}

// MigrationEntries appends entries to a migration's (beyond
// MaxMigrationEntries they are counted, not kept).
type MigrationEntries struct {
	ID      string           `json:"id"`
	Entries []MigrationEntry `json:"entries"`
}

func (*MigrationEntries) Type() CmdType { return CmdMigrationEntries }
func (*MigrationEntries) Scope() string { return "" }

func (c *MigrationEntries) apply(tx *Tx) error {
	if len(c.Entries) == 0 || len(c.Entries) > 1000 {
		return Invalidf("1 to 1000 entries at once")
	}
	rec, err := getRec[storedMigration](tx, KindMigration, c.ID, "migration")
	if err != nil {
		return err
	}
	for _, e := range c.Entries {
		if rec.Entries >= MaxMigrationEntries {
			rec.Dropped++
			continue
		}
		rec.Entries++
		e.Seq = rec.Entries
		e.Message, e.Path = clip(e.Message, maxMigrationText), clip(e.Path, maxMigrationText)
		if err := tx.putRec(KindMigrationEntry, entryKey(c.ID, e.Seq), e); err != nil {
			return err
		}
	}
	return tx.putRec(KindMigration, c.ID, rec)
}

func entryKey(id string, seq int) string { return fmt.Sprintf("%s/%08d", id, seq) }

// Migration reads one migration, its source's password and creator's id
// included (for its runner; answers leave them out).
func (tx *Tx) Migration(id string) (*Migration, error) {
	rec, err := getRec[storedMigration](tx, KindMigration, id, "migration")
	if err != nil {
		return nil, err
	}
	m := rec.Migration
	m.Source.Password, m.CreatedByID = rec.Secret.Password, rec.Secret.CreatedByID
	return &m, nil
}

// Migrations lists the migrations, newest first, without their secrets.
func (tx *Tx) Migrations() ([]Migration, error) {
	var out []Migration
	err := tx.scan(Space(KindMigration), "", func(_ string, v []byte) error {
		var rec storedMigration
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		out = append(out, rec.Migration)
		return nil
	})
	slices.SortFunc(out, func(a, b Migration) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, err
}

// MigrationEntries lists a migration's entries of kind ("" all) from
// sequence number after on, at most limit.
func (tx *Tx) MigrationEntries(id, kind string, after, limit int) ([]MigrationEntry, error) {
	var out []MigrationEntry
	err := tx.scan(Space(KindMigrationEntry), id+"/", func(_ string, v []byte) error {
		if len(out) >= limit {
			return errStop
		}
		var e MigrationEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		if e.Seq > after && (kind == "" || e.Kind == kind) {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}
