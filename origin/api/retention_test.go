package api_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

type cleanupAnswer struct {
	DryRun       bool `json:"dry_run"`
	BlobsScanned *int `json:"blobs_scanned"`
	Retention    struct {
		Repositories int   `json:"repositories"`
		Versions     int   `json:"versions"`
		Files        int   `json:"files"`
		Bytes        int64 `json:"bytes"`
		Failed       int
		Errors       []string
		Deleted      []struct {
			Repository, Package, Version, Rule string
		} `json:"deleted"`
	} `json:"retention"`
}

// versions lists the repository:package@version a cleanup answer names.
func (c cleanupAnswer) versions() []string {
	var out []string
	for _, d := range c.Retention.Deleted {
		out = append(out, d.Repository+":"+d.Package+"@"+d.Version)
	}
	slices.Sort(out)
	return out
}

// TestRetention: a repository's own rule keeps its newest versions and
// what was downloaded lately, a dry run reports what would go and
// deletes nothing, a run deletes through the format (events named for
// the retention rules) and collects the garbage after; versions uploaded
// before downloads were tracked count as downloaded when tracking began;
// repositories without a rule follow the default of the settings, a
// rule of keep-everything opts out, and null goes back to the default.
func TestRetention(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.DownloadsReport = 50 * time.Millisecond }})
	filesID := e.CreateRepo("files", "generic", false)
	e.CreateRepo("other", "generic", false)
	for v := 1; v <= 5; v++ {
		put(e, e.Admin, fmt.Sprintf("files/app/%d/a.txt", v), fmt.Sprintf("app %d", v))
		if v == 2 {
			put(e, e.Admin, "files/app/2/b.txt", "app 2, second file")
		}
		put(e, e.Admin, fmt.Sprintf("other/lib/%d/l.txt", v), fmt.Sprintf("lib %d", v))
		e.Clock.Advance(24 * time.Hour)
		e.Admin = e.Login("admin", origintest.AdminPassword) // the last token expired
	}
	user := newUser(e, "uma", "user")

	e.Do("PUT", "/api/v1/repositories/files", e.Admin, map[string]any{"retention": map[string]any{"keep_last": -1}}).
		WantError(400, "VALIDATION_FAILED").WantField("retention")
	var r struct {
		Retention *struct {
			KeepLast           int `json:"keep_last"`
			KeepDownloadedDays int `json:"keep_downloaded_days"`
		} `json:"retention"`
		Description string
	}
	e.Do("PUT", "/api/v1/repositories/files", e.Admin, map[string]any{"retention": map[string]any{"keep_last": 2, "keep_downloaded_days": 30}}).
		Want(200).JSON(&r)
	if r.Retention == nil || r.Retention.KeepLast != 2 || r.Retention.KeepDownloadedDays != 30 {
		t.Fatalf("the rule set: %+v", r.Retention)
	}
	e.Do("PUT", "/api/v1/repositories/files", e.Admin, map[string]any{"description": "kept files"}).Want(200).JSON(&r)
	if r.Retention == nil || r.Description != "kept files" {
		t.Fatalf("a change of the description lost the rule: %+v", r)
	}

	e.Do("POST", "/api/v1/admin/cleanup?dry_run=true", user.token, nil).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/admin/cleanup?dry_run=perhaps", e.Admin, nil).WantError(400, "VALIDATION_FAILED")
	dry := func() cleanupAnswer {
		t.Helper()
		var c cleanupAnswer
		e.Do("POST", "/api/v1/admin/cleanup?dry_run=true", e.Admin, nil).Want(200).JSON(&c)
		if !c.DryRun || c.BlobsScanned != nil {
			t.Fatalf("a dry run collected garbage: %+v", c)
		}
		return c
	}
	waitFor := func(want ...string) cleanupAnswer {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c := dry()
			if slices.Equal(c.versions(), want) {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("the dry run names %v, want %v", c.versions(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Nothing downloaded yet: nothing is known to be unused.
	waitFor()
	// The first download starts the tracking: what was uploaded before
	// counts as downloaded then.
	e.Do("GET", "/generic/files/app/1/a.txt", e.Admin, nil).Want(200)
	time.Sleep(300 * time.Millisecond) // a few reports
	waitFor()

	e.Clock.Advance(40 * 24 * time.Hour)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	waitFor("files:app@1", "files:app@2", "files:app@3")
	e.Do("GET", "/generic/files/app/1/a.txt", e.Admin, nil).Want(200)
	c := waitFor("files:app@2", "files:app@3")
	if c.Retention.Repositories != 1 || c.Retention.Files != 3 || c.Retention.Deleted[0].Rule == "" {
		t.Errorf("dry run: %+v", c.Retention)
	}
	if n, _ := e.RepoCounters(filesID); n != 6 {
		t.Fatalf("after dry runs the repository holds %d files, want 6", n)
	}

	// The default rule applies to the repository without its own.
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"retention.keep_last": 3}).Want(200)
	waitFor("files:app@2", "files:app@3", "other:lib@1", "other:lib@2")
	e.Do("PUT", "/api/v1/repositories/other", e.Admin, map[string]any{"retention": map[string]any{"keep_last": 0}}).Want(200)
	waitFor("files:app@2", "files:app@3")
	e.Do("PUT", "/api/v1/repositories/other", e.Admin, map[string]any{"retention": nil}).Want(200).JSON(&r)
	if r.Retention != nil {
		t.Errorf("null kept the rule: %+v", r.Retention)
	}
	waitFor("files:app@2", "files:app@3", "other:lib@1", "other:lib@2")
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"retention.keep_last": nil}).Want(200)

	var run cleanupAnswer
	e.Do("POST", "/api/v1/admin/cleanup", e.Admin, nil).Want(200).JSON(&run)
	if run.DryRun || run.BlobsScanned == nil || run.Retention.Versions != 2 || run.Retention.Files != 3 ||
		!slices.Equal(run.versions(), []string{"files:app@2", "files:app@3"}) {
		t.Fatalf("the run: %+v", run)
	}
	for path, code := range map[string]int{"app/1/a.txt": 200, "app/2/a.txt": 404, "app/2/b.txt": 404, "app/3/a.txt": 404,
		"app/4/a.txt": 200, "app/5/a.txt": 200} {
		e.Do("GET", "/generic/files/"+path, e.Admin, nil).Want(code)
	}
	var evs struct {
		Events []struct {
			Data struct {
				Version   string `json:"version"`
				DeletedBy struct {
					Username string `json:"username"`
				} `json:"deleted_by"`
			} `json:"data"`
		} `json:"events"`
	}
	e.Do("GET", "/api/v1/events?since=0&types=artifact.deleted", e.Admin, nil).Want(200).JSON(&evs)
	if len(evs.Events) != 3 {
		t.Fatalf("deleted events: %+v", evs.Events)
	}
	for _, ev := range evs.Events {
		if ev.Data.DeletedBy.Username != "retention" {
			t.Errorf("a deletion by %q, want the retention rules", ev.Data.DeletedBy.Username)
		}
	}
	waitFor()
}
