package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestMigrationResumesAfterKill: an origin process migrating 40 files
// from a slow Artifactory is killed with -9 mid-way. Restarted, it marks
// the migration interrupted; resumed, the migration ends with every file
// here once, and no file that was stored before the kill is downloaded
// again.
func TestMigrationResumesAfterKill(t *testing.T) {
	s := newSite(t)
	o := s.start(t)
	tok := login(t, o.url, "admin", "initial-pw-123")
	call(t, "PUT", o.url+"/api/v1/users/me", tok, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok = login(t, o.url, "admin", "changed-pw-456")

	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("files", "LOCAL", "Generic", "build outputs")
	const n = 40
	path := func(i int) string { return fmt.Sprintf("tool/1.%d/tool-%d.bin", i, i) }
	for i := range n {
		af.Put("files", path(i), artifactorytest.File{Data: []byte(fmt.Sprintf("the bytes of file %d", i))})
	}
	af.Slow(100 * time.Millisecond)
	var m meta.Migration
	_ = json.Unmarshal(call(t, "POST", o.url+"/api/v1/migrations", tok, strings.NewReader(fmt.Sprintf(
		`{"source_url":%q,"source_username":"af-admin","source_password":"af-password","repositories":["files"],"options":{"parallel_transfers":2,"batch_size":10}}`,
		af.URL)), 201), &m)
	call(t, "POST", o.url+"/api/v1/migrations/"+m.ID+"/start", tok, nil, 200)
	get := func() meta.Migration {
		var got meta.Migration
		_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/migrations/"+m.ID, tok, nil, 200), &got)
		return got
	}
	waitFor(t, 30*time.Second, "ten files migrated", func() bool { return get().Progress.MigratedArtifacts >= 10 })
	_ = o.cmd.Process.Kill()
	_ = o.cmd.Wait()

	o = s.start(t)
	tok = login(t, o.url, "admin", "changed-pw-456")
	var versions struct {
		Versions []struct{ Version string } `json:"versions"`
	}
	_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/packages/tool/versions", tok, nil, 200), &versions)
	stored := map[string]bool{} // stored before the kill
	for _, v := range versions.Versions {
		var i int
		fmt.Sscanf(v.Version, "1.%d", &i)
		stored[path(i)] = true
	}
	if len(stored) < 10 {
		t.Fatalf("%d files stored before the kill, the migration said 10", len(stored))
	}
	waitFor(t, 20*time.Second, "the migration marked interrupted", func() bool { return get().Status == meta.MigrationInterrupted })
	af.Slow(0)
	call(t, "POST", o.url+"/api/v1/migrations/"+m.ID+"/resume", tok, nil, 200)
	waitFor(t, 60*time.Second, "the resumed migration to end", func() bool { return meta.MigrationDone(get().Status) })
	if got := get(); got.Status != meta.MigrationCompleted || got.Progress.MigratedArtifacts != n || got.Progress.FailedArtifacts != 0 {
		t.Fatalf("the resumed migration: %s %+v", got.Status, got.Progress)
	}
	_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/packages/tool/versions", tok, nil, 200), &versions)
	if len(versions.Versions) != n {
		t.Errorf("%d versions of tool here, want %d", len(versions.Versions), n)
	}
	again := 0
	for p := range stored {
		if d := af.Downloads("files", p); d > 1 {
			again++
			t.Errorf("%s, downloaded before the kill, was downloaded %d times", p, d)
		}
	}
	t.Logf("%d files were stored before the kill; downloaded again: %d", len(stored), again)
}

// TestMigrationAcrossFailover: three origin processes; the leader runs a
// migration from a slow source and is killed with -9 mid-way. The new
// leader marks it interrupted; resumed at a survivor, it ends there with
// every file once.
func TestMigrationAcrossFailover(t *testing.T) {
	c := startCluster(t)
	leader := c.byNodeID()[c.view.LeaderID]
	other := c.procs[(leader+1)%3].url
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("files", "LOCAL", "Generic", "build outputs")
	const n = 30
	for i := range n {
		af.Put("files", fmt.Sprintf("tool/1.%d/tool.bin", i), artifactorytest.File{Data: []byte(fmt.Sprintf("file %d", i))})
	}
	af.Slow(150 * time.Millisecond)
	var m meta.Migration
	_ = json.Unmarshal(call(t, "POST", other+"/api/v1/migrations", c.tok, strings.NewReader(fmt.Sprintf(
		`{"source_url":%q,"source_username":"af-admin","source_password":"af-password","repositories":["files"],"options":{"parallel_transfers":2,"batch_size":5}}`,
		af.URL)), 201), &m)
	call(t, "POST", other+"/api/v1/migrations/"+m.ID+"/start", c.tok, nil, 200)
	get := func() meta.Migration {
		var got meta.Migration
		_ = json.Unmarshal(call(t, "GET", other+"/api/v1/migrations/"+m.ID, c.tok, nil, 200), &got)
		return got
	}
	waitFor(t, 30*time.Second, "five files migrated", func() bool { return get().Progress.MigratedArtifacts >= 5 })
	if got := get(); got.Node != c.view.LeaderID {
		t.Fatalf("the migration runs on %s, not the leader %s", got.Node, c.view.LeaderID)
	}
	_ = c.procs[leader].cmd.Process.Kill()
	_ = c.procs[leader].cmd.Wait()
	waitFor(t, 30*time.Second, "the new leader to mark it interrupted", func() bool { return get().Status == meta.MigrationInterrupted })
	af.Slow(0)
	call(t, "POST", other+"/api/v1/migrations/"+m.ID+"/resume", c.tok, nil, 200)
	waitFor(t, 60*time.Second, "the resumed migration to end", func() bool { return meta.MigrationDone(get().Status) })
	if got := get(); got.Status != meta.MigrationCompleted || got.Progress.MigratedArtifacts != n || got.Node == c.view.LeaderID {
		t.Fatalf("after the failover: %s %+v on %s", got.Status, got.Progress, got.Node)
	}
	var versions struct {
		Versions []struct{ Version string } `json:"versions"`
	}
	_ = json.Unmarshal(call(t, "GET", other+"/api/v1/packages/tool/versions", c.tok, nil, 200), &versions)
	if len(versions.Versions) != n {
		t.Errorf("%d versions here, want %d", len(versions.Versions), n)
	}
}
