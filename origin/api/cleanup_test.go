package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// blobFile is where the origin keeps the blob of content.
func blobFile(e *origintest.Env, content string) string {
	sum := sha256.Sum256([]byte(content))
	hx := hex.EncodeToString(sum[:])
	return filepath.Join(e.DataDir, "blobs", "sha256", hx[:2], hx)
}

type cleanupResult struct {
	BlobsScanned int `json:"blobs_scanned"`
	Blobs        struct {
		Removed int   `json:"removed"`
		Bytes   int64 `json:"bytes_freed"`
	} `json:"blobs"`
	BytesFreed   int64  `json:"bytes_freed"`
	GraceSeconds int64  `json:"grace_seconds"`
	StartedAt    string `json:"started_at"`
}

// TestCleanup: POST /admin/cleanup removes the blobs of deleted and
// replaced files once they are older than the grace period, and nothing
// a file still needs; only an administrator may run it.
func TestCleanup(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	const shared, deleted, replaced, current = "bytes two files share", "bytes of a deleted file", "first version", "second version"
	put(e, "Bearer "+e.Admin, "files/app/1/a.txt", shared)
	put(e, "Bearer "+e.Admin, "files/app/1/b.txt", shared)
	gone := put(e, "Bearer "+e.Admin, "files/app/1/c.txt", deleted)
	put(e, "Bearer "+e.Admin, "files/app/1/d.txt", replaced)
	e.Do("DELETE", "/generic/files/app/1/a.txt", "Bearer "+e.Admin, nil).Want(204)
	e.Do("DELETE", "/api/v1/artifacts/"+gone.ID, "Bearer "+e.Admin, nil).Want(204)
	e.Do("PUT", "/generic/files/app/1/d.txt", "Bearer "+e.Admin, current).Want(201)

	user := newUser(e, "someone", "user")
	e.Do("POST", "/api/v1/admin/cleanup", "", nil).WantError(401, "UNAUTHORIZED")
	e.Do("POST", "/api/v1/admin/cleanup", "Bearer "+user.token, nil).WantError(403, "FORBIDDEN")

	// Within the grace period nothing goes.
	var res cleanupResult
	e.Do("POST", "/api/v1/admin/cleanup", "Bearer "+e.Admin, nil).Want(200).JSON(&res)
	if res.Blobs.Removed != 0 || res.BlobsScanned != 4 || res.GraceSeconds != 3600 {
		t.Fatalf("cleanup within the grace period = %+v, want 4 scanned and none removed", res)
	}

	e.Clock.Advance(2 * time.Hour)
	e.Admin = e.Login("admin", origintest.AdminPassword) // the old access token expired
	e.Do("POST", "/api/v1/admin/cleanup", "Bearer "+e.Admin, nil).Want(200).JSON(&res)
	if want := int64(len(deleted) + len(replaced)); res.Blobs.Removed != 2 || res.Blobs.Bytes != want || res.BytesFreed != want {
		t.Fatalf("cleanup = %+v, want 2 blobs of %d bytes removed", res, want)
	}
	for content, kept := range map[string]bool{shared: true, current: true, deleted: false, replaced: false} {
		if _, err := os.Stat(blobFile(e, content)); (err == nil) != kept {
			t.Errorf("blob of %q: stat err = %v, want kept = %v", content, err, kept)
		}
	}
	if got := e.Do("GET", "/generic/files/app/1/b.txt", "Bearer "+e.Admin, nil).Want(200).Body; string(got) != shared {
		t.Fatalf("b.txt = %q", got)
	}
	if got := e.Do("GET", "/generic/files/app/1/d.txt", "Bearer "+e.Admin, nil).Want(200).Body; string(got) != current {
		t.Fatalf("d.txt = %q", got)
	}
	// Content that was collected can be uploaded again.
	put(e, "Bearer "+e.Admin, "files/app/1/c.txt", deleted)
	if got := e.Do("GET", "/generic/files/app/1/c.txt", "Bearer "+e.Admin, nil).Want(200).Body; string(got) != deleted {
		t.Fatalf("c.txt after upload again = %q", got)
	}
	metrics := string(e.Do("GET", "/metrics", "", nil).Want(200).Body)
	for _, want := range []string{`depot_gc_runs_total{outcome="ok"} 2`, `depot_gc_removed_total{kind="blob"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
