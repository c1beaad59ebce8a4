package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// formatsOver are every format over e's store, as the origin keys them.
func formatsOver(e *formattest.Env) map[string]format.Format {
	return format.ByRepoFormat(all.Build(&format.Env{Meta: e.Store, Now: time.Now}))
}

// newApp is the application layer over a new store with every format,
// and an administrator's principal (root, not yet a user).
func newApp(t *testing.T) (*formattest.Env, *app.App, *auth.Principal) {
	e := formattest.New(t)
	a := &app.App{Store: e.Store, Commit: e, Hasher: auth.NewHasher(1), Formats: formatsOver(e), Now: time.Now, NewID: auth.NewID}
	return e, a, &auth.Principal{UserID: "root", Username: "root", Role: meta.RoleAdmin}
}

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
	_, a, admin := newApp(t)
	ctx := t.Context()
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

	// A page left unset (a caller that is not the HTTP API) is the
	// default page of every listing.
	if l, err := a.ListRepositories(ctx, admin, app.RepoFilter{}); err != nil || l.Total != 1 || len(l.Items) != 1 || l.Page != app.DefaultPage {
		t.Errorf("repositories, no page: %+v %v", l, err)
	}
	if l, err := a.ListPackages(ctx, admin, app.PackageFilter{}); err != nil || l.Page != app.DefaultPage {
		t.Errorf("packages, no page: %+v %v", l, err)
	}
	url := "https://hooks.example.com/depot"
	hook, _, err := a.CreateWebhook(ctx, admin, app.WebhookInput{URL: &url, Events: []string{"artifact.uploaded"}})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := a.ListDeliveries(ctx, admin, hook.ID, app.Page{}); err != nil || l.Total != 0 || l.Page != app.DefaultPage {
		t.Errorf("deliveries, no page: %+v %v", l, err)
	}
}

// TestSignInAndNodesWithoutHTTP: a login session and an edge node's
// heartbeat, as plain calls.
func TestSignInAndNodesWithoutHTTP(t *testing.T) {
	e := formattest.New(t)
	jwt := auth.NewJWT([]byte("0123456789abcdef0123456789abcdef"), time.Now)
	hasher := auth.NewHasher(1)
	authn := &auth.Authenticator{Meta: e.Store, JWT: jwt, Cache: auth.NewCredCache(time.Minute, 100, time.Now), Now: time.Now, Hasher: hasher,
		Guard: auth.NewGuard(100, 100, time.Minute, time.Now)}
	a := &app.App{Store: e.Store, Commit: e, Authn: authn, Hasher: hasher, Formats: formatsOver(e), Now: time.Now, NewID: auth.NewID,
		AccessTTL: time.Minute, RefreshTTL: time.Hour}
	ctx := t.Context()
	admin := &auth.Principal{UserID: "root", Username: "root", Role: meta.RoleAdmin}
	if _, _, err := a.CreateUser(ctx, admin, app.NewUser{Username: "ann", Email: "ann@example.com", Password: "a-long-password-2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.SignIn(ctx, app.Credentials{Username: "ann", Password: "wrong-password"}, "192.0.2.1"); code(err) != apierr.Unauthorized {
		t.Fatalf("a wrong password: %v", err)
	}
	if _, _, _, err := a.SignIn(ctx, app.Credentials{Username: "ann"}, "192.0.2.1"); code(err) != apierr.ValidationFailed {
		t.Fatalf("no password: %v", err)
	}
	pair, p, idx, err := a.SignIn(ctx, app.Credentials{Username: "ann", Password: "a-long-password-2"}, "192.0.2.1")
	if err != nil || idx == 0 || p.Username != "ann" || pair.AccessToken == "" || pair.RefreshToken == "" || pair.ExpiresIn != 60 {
		t.Fatalf("sign in: %+v %+v %d %v", pair, p, idx, err)
	}
	again, err := a.Refresh(ctx, pair.RefreshToken)
	if err != nil || again.AccessToken == "" || again.RefreshToken != "" {
		t.Fatalf("refresh: %+v %v", again, err)
	}
	who, err := authn.Authenticate(ctx, "Bearer "+again.AccessToken, "192.0.2.1")
	if err != nil || who.Username != "ann" {
		t.Fatalf("the refreshed token: %+v %v", who, err)
	}
	if _, err := a.SignOut(ctx, who); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Refresh(ctx, pair.RefreshToken); code(err) != apierr.Unauthorized {
		t.Fatalf("refresh after signing out: %v", err)
	}

	repo, _, err := a.CreateRepository(ctx, admin, app.NewRepository{Name: "libs", Format: "generic"})
	if err != nil {
		t.Fatal(err)
	}
	node, secret, _, err := a.CreateEdgeNode(ctx, admin, app.NewEdgeNode{Name: "eu", URL: "https://eu.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AssignRepositories(ctx, admin, node.ID, []string{repo.ID}); err != nil {
		t.Fatal(err)
	}
	np, err := authn.EdgeToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Heartbeat(ctx, np, "someone-else", protocol.Report{}); code(err) != apierr.Forbidden {
		t.Fatalf("a node reporting for another: %v", err)
	}
	if _, _, err := a.Heartbeat(ctx, np, node.ID, protocol.Report{CachedBytes: -1}); code(err) != apierr.ValidationFailed {
		t.Fatalf("a negative report: %v", err)
	}
	as, idx, err := a.Heartbeat(ctx, np, node.ID, protocol.Report{AppliedIndex: 3, Version: "test"})
	if err != nil || idx == 0 || len(as.RepositoryIDs) != 1 || as.RepositoryIDs[0] != repo.ID || as.OriginIndex < idx {
		t.Fatalf("heartbeat: %+v %d %v", as, idx, err)
	}
	if _, idx, err := a.Heartbeat(ctx, np, node.ID, protocol.Report{AppliedIndex: 4, Version: "test"}); err != nil || idx != 0 {
		t.Fatalf("a heartbeat right after another commits nothing: %d %v", idx, err)
	}
	v, err := a.GetEdgeNode(ctx, admin, node.ID)
	if err != nil || v.Status != "online" || v.Version != "test" {
		t.Fatalf("the node after its report: %+v %v", v, err)
	}
	if _, err := a.ClusterView(ctx, admin); code(err) != apierr.NotFound {
		t.Fatalf("the cluster of a lone origin: %v", err)
	}
}

// interloper commits its write just before the first command it is given:
// another origin's write landing between a decision's read and its commit.
type interloper struct {
	meta.Committer
	first meta.Command
	done  bool
}

func (c *interloper) Apply(ctx context.Context, cmd meta.Command) (uint64, error) {
	if !c.done {
		c.done = true
		if _, err := c.Committer.Apply(ctx, c.first); err != nil {
			return 0, err
		}
	}
	return c.Committer.Apply(ctx, cmd)
}

// TestDecisionsCarryWhatTheyRead: a repository administrator whose admin
// grant is revoked between the read that authorised a write and its
// commit does not get the write: the command carries the grant it read,
// is refused as stale, and decided again without the grant. Likewise a
// password change decided from a password changed meanwhile.
func TestDecisionsCarryWhatTheyRead(t *testing.T) {
	e, a, admin := newApp(t)
	ctx := t.Context()
	ann, _, err := a.CreateUser(ctx, admin, app.NewUser{Username: "ann", Email: "ann@example.com", Password: "a-long-password-2"})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := a.CreateUser(ctx, admin, app.NewUser{Username: "bob", Email: "bob@example.com", Password: "a-long-password-3"})
	if err != nil {
		t.Fatal(err)
	}
	repo, _, err := a.CreateRepository(ctx, admin, app.NewRepository{Name: "libs", Format: "generic"})
	if err != nil {
		t.Fatal(err)
	}
	grant, _, err := a.CreatePermission(ctx, admin, app.NewPermission{RepositoryID: repo.ID, UserID: ann.ID, Permissions: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	p := &auth.Principal{UserID: ann.ID, Username: "ann", Role: meta.RoleUser}
	revoke := func() *interloper { return &interloper{Committer: e, first: &meta.PermissionDelete{ID: grant.ID}} }

	a.Commit = revoke()
	if _, _, err := a.CreatePermission(ctx, p, app.NewPermission{RepositoryID: repo.ID, UserID: bob.ID, Permissions: []string{"read"}}); code(err) != apierr.Forbidden {
		t.Fatalf("a grant made by an administrator revoked meanwhile: %v", err)
	}
	desc := "changed"
	for name, write := range map[string]func() error{
		"update": func() error {
			_, _, err := a.UpdateRepository(ctx, p, repo.ID, app.RepositoryChange{Description: &desc})
			return err
		},
		"delete": func() error { _, err := a.DeleteRepository(ctx, p, repo.ID); return err },
	} {
		a.Commit = e
		if grant, _, err = a.CreatePermission(ctx, admin, app.NewPermission{RepositoryID: repo.ID, UserID: ann.ID, Permissions: []string{"admin"}}); err != nil {
			t.Fatal(err)
		}
		a.Commit = revoke()
		if err := write(); code(err) != apierr.Forbidden && code(err) != apierr.NotFound {
			t.Fatalf("%s by an administrator revoked meanwhile: %v", name, err)
		}
	}
	if r, err := a.GetRepository(ctx, admin, repo.ID); err != nil || r.Description == desc {
		t.Fatalf("the repository after the refused writes: %+v %v", r, err)
	}

	// A password changed meanwhile refuses a password change decided from
	// the old one, not an email change.
	changed := func(hash string) *interloper {
		return &interloper{Committer: e, first: &meta.UserUpdate{ID: ann.ID, PasswordHash: &hash, At: time.Now()}}
	}
	a.Commit = changed("$argon2id$elsewhere")
	next := "a-long-password-9"
	if _, _, err := a.UpdateMe(ctx, p, app.AccountChange{CurrentPassword: "a-long-password-2", Password: &next}); code(err) != apierr.Conflict {
		t.Fatalf("a password change decided from a password changed meanwhile: %v", err)
	}
	a.Commit = changed("$argon2id$elsewhere-again")
	email := "ann@new.example.com"
	if u, _, err := a.UpdateMe(ctx, p, app.AccountChange{Email: &email}); err != nil || u.Email != email {
		t.Fatalf("an email change while the password changed: %+v %v", u, err)
	}
}
