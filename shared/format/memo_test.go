package format_test

import (
	"context"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestReadPathMemos: the access decision and the artifact of a path,
// remembered between requests, follow every change at once: a grant
// revoked, the user's role changed, a file replaced and deleted.
func TestReadPathMemos(t *testing.T) {
	e := formattest.New(t)
	repo := e.Repo("files", "generic") // private
	now := time.Now().UTC()
	apply := func(c meta.Command) {
		t.Helper()
		if _, err := e.Apply(context.Background(), c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	apply(&meta.UserCreate{User: meta.User{ID: "u1", Username: "ann", Role: meta.RoleUser, CreatedAt: now, UpdatedAt: now}})
	apply(&meta.PermissionCreate{Permission: meta.Permission{ID: "p1", RepositoryID: repo.ID, UserID: "u1",
		Permissions: []string{meta.ActionRead}, CreatedAt: now}})
	apply(&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a1", RepositoryID: repo.ID, Path: "tool/1/tool.bin", PackageName: "tool",
		Version: "1", Digest: "sha256:one"}})
	env := &format.Env{Meta: e.Store, Now: time.Now}
	r := &format.Request{Principal: &auth.Principal{UserID: "u1", Username: "ann", Role: meta.RoleUser}}
	may := func() bool {
		t.Helper()
		_, err := env.Repo(r, "files", meta.ActionRead, "generic")
		return err == nil
	}
	digest := func() string {
		t.Helper()
		a, err := env.Artifact(repo, "tool/1/tool.bin")
		if err != nil {
			return ""
		}
		return a.Digest
	}
	for range 2 { // decided, then remembered
		if !may() || digest() != "sha256:one" {
			t.Fatalf("ann reading her granted repository: %v %q", may(), digest())
		}
	}
	apply(&meta.ArtifactPut{Artifact: meta.Artifact{ID: "a2", RepositoryID: repo.ID, Path: "tool/1/tool.bin", PackageName: "tool",
		Version: "1", Digest: "sha256:two"}, Replace: true})
	if d := digest(); d != "sha256:two" {
		t.Errorf("the replaced file: %q", d)
	}
	apply(&meta.ArtifactDelete{ID: "a2"})
	if d := digest(); d != "" {
		t.Errorf("the deleted file: %q", d)
	}
	apply(&meta.PermissionDelete{ID: "p1"})
	if may() {
		t.Error("ann reads the repository after her grant was revoked")
	}
	admin := meta.RoleAdmin
	apply(&meta.UserUpdate{ID: "u1", Role: &admin, At: now})
	r.Principal.Role = meta.RoleAdmin // as her next request's credential says
	if !may() {
		t.Error("ann, made an administrator, does not read the repository")
	}
}
