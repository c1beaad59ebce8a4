package clienttest

import (
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/meta"
)

// Migrate makes a migration with body (POST /migrations), starts it and
// waits (a minute at most) for its end.
func Migrate(t *testing.T, e *origintest.Env, body map[string]any) meta.Migration {
	t.Helper()
	var m meta.Migration
	e.Do("POST", "/api/v1/migrations", e.Admin, body).Want(201).JSON(&m)
	e.Do("POST", "/api/v1/migrations/"+m.ID+"/start", e.Admin, nil).Want(200)
	for end := time.Now().Add(time.Minute); !meta.MigrationDone(m.Status); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the migration is still %s: %+v", m.Status, m.Progress)
		}
		e.Do("GET", "/api/v1/migrations/"+m.ID, e.Admin, nil).Want(200).JSON(&m)
	}
	return m
}

// MigrationFailures are a migration's failed files.
func MigrationFailures(t *testing.T, e *origintest.Env, id string) []meta.MigrationEntry {
	t.Helper()
	var f struct{ Entries []meta.MigrationEntry }
	e.Do("GET", "/api/v1/migrations/"+id+"/failures", e.Admin, nil).Want(200).JSON(&f)
	return f.Entries
}

// WantMigrated checks that a migration completed with migrated files
// moved and skipped left to the registry, reporting its failures if not.
func WantMigrated(t *testing.T, e *origintest.Env, m meta.Migration, migrated, skipped int64) {
	t.Helper()
	if m.Status != meta.MigrationCompleted || m.Progress.MigratedArtifacts != migrated || m.Progress.SkippedArtifacts != skipped {
		t.Fatalf("the migration: %s %+v; failures %+v", m.Status, m.Progress, MigrationFailures(t, e, m.ID))
	}
}
