package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

func code(err error) apierr.Code {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestUseCasesWithoutHTTP: the operations run as plain calls, as the web
// UI, the CLI and importers will make them: who may create what, what a
// user sees of repositories and grants, and what a write returns.
func TestUseCasesWithoutHTTP(t *testing.T) {
	e := formattest.New(t)
	formats := map[string]format.Format{}
	for _, f := range all.Build(&format.Env{Meta: e.Store, Now: time.Now}) {
		formats[f.Name()] = f
	}
	a := &app.App{Store: e.Store, Commit: e, Hasher: auth.NewHasher(1), Formats: formats, Now: time.Now, NewID: auth.NewID}
	ctx := t.Context()
	admin := &auth.Principal{UserID: "root", Username: "root", Role: meta.RoleAdmin}
	if _, _, err := a.CreateUser(ctx, admin, app.NewUser{Username: "root", Email: "root@example.com", Password: "a-long-password-1", Role: meta.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	ann, idx, err := a.CreateUser(ctx, admin, app.NewUser{Username: "ann", Email: "ann@example.com", Password: "a-long-password-2"})
	if err != nil || idx == 0 || ann.Role != meta.RoleUser || ann.PasswordHash == "" {
		t.Fatalf("create ann: %+v %d %v", ann, idx, err)
	}
	p := &auth.Principal{UserID: ann.ID, Username: "ann", Role: meta.RoleUser}
	if _, _, err := a.CreateUser(ctx, p, app.NewUser{Username: "bob", Email: "bob@example.com", Password: "a-long-password-3"}); code(err) != apierr.Forbidden {
		t.Fatalf("a user creating a user: %v", err)
	}
	if _, _, err := a.CreateRepository(ctx, p, app.NewRepository{Name: "mine", Format: "generic"}); code(err) != apierr.Forbidden {
		t.Fatalf("a user creating a repository where only admins may: %v", err)
	}
	if _, _, err := a.CreateRepository(ctx, admin, app.NewRepository{Name: "bad name!", Format: "generic"}); code(err) != apierr.ValidationFailed {
		t.Fatalf("a bad name: %v", err)
	}
	repo, _, err := a.CreateRepository(ctx, admin, app.NewRepository{Name: "libs", Format: "generic"})
	if err != nil {
		t.Fatal(err)
	}
	list := func() int {
		l, err := a.ListRepositories(ctx, p, app.RepoFilter{Page: app.DefaultPage})
		if err != nil {
			t.Fatal(err)
		}
		return l.Total
	}
	if n := list(); n != 0 {
		t.Fatalf("ann sees %d repositories before a grant", n)
	}
	if _, _, err := a.CreatePermission(ctx, p, app.NewPermission{RepositoryID: repo.ID, UserID: ann.ID, Permissions: []string{"read"}}); code(err) != apierr.Forbidden {
		t.Fatalf("ann granting herself: %v", err)
	}
	perm, _, err := a.CreatePermission(ctx, admin, app.NewPermission{RepositoryID: repo.ID, UserID: ann.ID, Permissions: []string{"read", "read"}})
	if err != nil || len(perm.Permissions) != 1 {
		t.Fatalf("grant: %+v %v", perm, err)
	}
	if n := list(); n != 1 {
		t.Fatalf("ann sees %d repositories after a grant", n)
	}
	if perms, err := a.ListPermissions(ctx, p, ""); err != nil || len(perms) != 1 {
		t.Fatalf("ann's grants: %v %v", perms, err)
	}
	if _, err := a.DeletePermission(ctx, p, perm.ID); code(err) != apierr.Forbidden {
		t.Fatalf("ann revoking a grant: %v", err)
	}
	tok, secret, _, err := a.CreateToken(ctx, p, app.NewToken{Name: " ci ", Scopes: []string{"repository:read"}})
	if err != nil || tok.Name != "ci" || secret == "" || tok.Hash != auth.HashAPIToken(secret) {
		t.Fatalf("token: %+v %v", tok, err)
	}
	if _, err := a.DeleteUser(ctx, admin, "root"); code(err) != apierr.Conflict {
		t.Fatalf("deleting oneself: %v", err)
	}
}
