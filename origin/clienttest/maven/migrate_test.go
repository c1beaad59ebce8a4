package maven_test

import (
	"crypto/sha1"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestMigrateFromArtifactory: a Maven repository and a generic one of an
// Artifactory (a stand-in speaking its REST API: AQL pages, sizes as
// strings, checksum headers) are migrated through the API. Creating the
// migration checks the source (wrong credentials, a repository it lacks:
// refused at once); started, the leader moves every file through the
// format's write path, checking each against the source's checksum (a
// corrupted file is a failure, not stored; a file whose downloads fail
// twice arrives on the third try); the checksum files and Maven metadata
// are left to the registry, which serves them from what it stores; a
// remote repository is reported as skipped. mvn then resolves the
// migrated jar from here. A second migration of the same repositories
// downloads nothing again and stores nothing twice.
func TestMigrateFromArtifactory(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	e := clienttest.Start(t)
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("libs-release", "LOCAL", "Maven", "released libraries")
	af.AddRepo("files", "LOCAL", "Generic", "tools")
	af.AddRepo("npm-remote", "REMOTE", "Npm", "the npm registry, cached")
	work := t.TempDir()
	_, jar := makeJar(t, work, "demo-1.0.jar", "migrated demo")
	pom := []byte(libPOM("demo", "1.0"))
	sum := sha1.Sum(jar)
	const dir = "com/example/demo/1.0/"
	af.Put("libs-release", dir+"demo-1.0.jar", artifactorytest.File{Data: jar})
	af.Put("libs-release", dir+"demo-1.0.jar.sha1", artifactorytest.File{Data: []byte(hex.EncodeToString(sum[:]))})
	af.Put("libs-release", dir+"demo-1.0.pom", artifactorytest.File{Data: pom, NoSHA256: true}) // stored before 5.5: sha1 only
	af.Put("libs-release", "com/example/demo/maven-metadata.xml", artifactorytest.File{Data: []byte("<metadata/>")})
	_, other := makeJar(t, work, "other-2.0.jar", "other")
	af.Put("libs-release", "com/example/other/2.0/other-2.0.jar", artifactorytest.File{Data: other})
	af.Fail("libs-release", "com/example/other/2.0/other-2.0.jar", 2)
	_, bad := makeJar(t, work, "bad-1.0.jar", "bad")
	af.Put("libs-release", "com/example/bad/1.0/bad-1.0.jar", artifactorytest.File{Data: bad})
	af.Corrupt("libs-release", "com/example/bad/1.0/bad-1.0.jar")
	af.Put("files", "tool/1.0/tool.bin", artifactorytest.File{Data: []byte("a tool's bytes")})

	body := func(password string, repos ...string) map[string]any {
		return map[string]any{"source": map[string]any{"type": "artifactory", "url": af.BaseURL(), "username": "af-admin", "password": password},
			"repositories": repos, "options": map[string]any{"parallel_transfers": 2, "batch_size": 2, "retry_attempts": 2}}
	}
	e.Do("POST", "/api/v1/migrations", e.Admin, body("wrong", "libs-release")).WantField("source")
	e.Do("POST", "/api/v1/migrations", e.Admin, body("af-password", "libs-release", "nothing-here")).WantError(400, "VALIDATION_FAILED")
	alice := clienttest.NewUser(e, "alice")
	e.Do("POST", "/api/v1/migrations", alice.Token, body("af-password", "libs-release")).WantError(403, "FORBIDDEN")

	migrate := func() meta.Migration {
		t.Helper()
		var m meta.Migration
		e.Do("POST", "/api/v1/migrations", e.Admin, body("af-password", "libs-release", "files", "npm-remote")).Want(201).JSON(&m)
		if m.Status != meta.MigrationPending || m.ID == "" {
			t.Fatalf("a new migration: %+v", m)
		}
		if r := e.Do("POST", "/api/v1/migrations/"+m.ID+"/resume", e.Admin, nil).WantError(409, "CONFLICT"); !strings.Contains(string(r.Body),
			"the migration is pending: only an interrupted one can be resumed; start it") {
			t.Errorf("resuming a pending migration: %s", r.Body)
		}
		e.Do("POST", "/api/v1/migrations/"+m.ID+"/start", e.Admin, nil).Want(200)
		for end := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			e.Do("GET", "/api/v1/migrations/"+m.ID, e.Admin, nil).Want(200).JSON(&m)
			if meta.MigrationDone(m.Status) {
				return m
			}
			if time.Now().After(end) {
				t.Fatalf("the migration is still %s: %+v", m.Status, m.Progress)
			}
		}
	}
	m := migrate()
	want := meta.MigrationProgress{TotalArtifacts: 7, MigratedArtifacts: 4, FailedArtifacts: 1, SkippedArtifacts: 2,
		PercentComplete: 100, Verified: 4}
	got := m.Progress
	got.Bytes, got.CurrentRepository = 0, ""
	if m.Status != meta.MigrationCompletedWithErrors || got != want {
		t.Fatalf("the migration: %s %+v, want %+v", m.Status, m.Progress, want)
	}
	var failures struct{ Entries []meta.MigrationEntry }
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/failures", e.Admin, nil).Want(200).JSON(&failures)
	if len(failures.Entries) != 1 || failures.Entries[0].Path != "com/example/bad/1.0/bad-1.0.jar" || !strings.HasPrefix(failures.Entries[0].Message, "checksum mismatch") {
		t.Fatalf("failures: %+v", failures.Entries)
	}
	var report app.MigrationReport
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/report", e.Admin, nil).Want(200).JSON(&report)
	if report.Checksums.Verified != 4 || report.Checksums.Failed != 1 || !slices.Equal(report.Repositories, []string{"libs-release", "files", "npm-remote"}) {
		t.Errorf("report: %+v", report)
	}
	var logs struct{ Entries []meta.MigrationEntry }
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/logs", e.Admin, nil).Want(200).JSON(&logs)
	if !slices.ContainsFunc(logs.Entries, func(l meta.MigrationEntry) bool {
		return strings.Contains(l.Message, "npm-remote: skipped: a remote repository")
	}) {
		t.Errorf("the log does not say the remote repository was skipped: %+v", logs.Entries)
	}
	auth := basic("admin", origintest.AdminPassword)
	e.Do("GET", "/maven2/libs-release/com/example/bad/1.0/bad-1.0.jar", auth, nil).Want(404)
	if got := string(e.Do("GET", "/generic/files/tool/1.0/tool.bin", auth, nil).Want(200).Body); got != "a tool's bytes" {
		t.Errorf("the generic file: %q", got)
	}
	if got := string(e.Do("GET", "/maven2/libs-release/"+dir+"demo-1.0.jar.sha1", auth, nil).Want(200).Body); got != hex.EncodeToString(sum[:]) {
		t.Errorf("the jar's sha1 served here: %q", got)
	}

	// mvn resolves the migrated jar (and its POM) from here.
	project := t.TempDir()
	clienttest.WriteFile(t, filepath.Join(project, "pom.xml"), pomHead+`  <groupId>com.example</groupId><artifactId>uses-demo</artifactId><version>1.0</version>
  <build><extensions><extension><groupId>com.example</groupId><artifactId>demo</artifactId><version>1.0</version></extension></extensions></build>
</project>
`)
	newMvn(t, e.URL+"/maven2/libs-release", "admin", origintest.AdminPassword).Run(project, "validate")

	// Again: what is here already is neither downloaded nor stored again.
	before := af.Downloads("libs-release", dir+"demo-1.0.jar")
	again := migrate()
	if again.Progress.MigratedArtifacts != 4 || again.Progress.FailedArtifacts != 1 || af.Downloads("libs-release", dir+"demo-1.0.jar") != before {
		t.Errorf("the second migration: %+v, downloads %d then %d", again.Progress, before, af.Downloads("libs-release", dir+"demo-1.0.jar"))
	}
	var versions struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/com.example:demo/versions", e.Admin, nil).Want(200).JSON(&versions)
	if len(versions.Versions) != 1 {
		t.Fatalf("versions of com.example:demo: %+v", versions)
	}
	// include_metadata (on by default): the source's upload time and uploader.
	var art struct {
		UploadedAt time.Time `json:"uploaded_at"`
		UploadedBy string    `json:"uploaded_by"`
	}
	e.Do("GET", "/api/v1/artifacts/"+versions.Versions[0].ArtifactID, e.Admin, nil).Want(200).JSON(&art)
	if !art.UploadedAt.Equal(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)) || art.UploadedBy != "deployer" {
		t.Errorf("the migrated jar's upload: %+v", art)
	}
}
