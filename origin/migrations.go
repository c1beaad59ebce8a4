package origin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/service/migrate"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// newMigrator makes the migration service: it writes through the format
// servers (by repository format), as the administrator who made a
// migration while they still are one, within the room uploads have here.
func (o *Origin) newMigrator(application *app.App, servers map[string]*format.Server, scratch string, now func() time.Time, log *slog.Logger) *migrate.Service {
	return migrate.New(migrate.Config{Store: o.store, Commit: o.commit, Servers: servers, Node: o.nodeID, Now: now,
		Log: log.With("component", "migrate"), SpillDir: filepath.Join(scratch, "migrate"), Accounts: migrationAccounts{application, o.store},
		Room: func() (int64, bool) {
			st := o.space.Status()
			if st.Usage.Total == 0 {
				return 0, false // not known here
			}
			return max(0, int64(st.Usage.Free)-st.MinFree), true
		},
		CreateRepo: func(ctx context.Context, p *auth.Principal, name, formatName, description string) (*meta.Repository, error) {
			repo, _, err := application.CreateRepository(ctx, p, app.NewRepository{Name: name, Format: formatName, Description: description})
			return repo, err
		},
		Principal: func(userID string) (*auth.Principal, error) {
			var u *meta.User
			err := o.store.View(func(tx *meta.Tx) error { var err error; u, err = tx.User(userID); return err })
			switch {
			case err != nil:
				return nil, err
			case u.Disabled || u.Role != meta.RoleAdmin:
				return nil, fmt.Errorf("%s is no longer an active administrator", u.Username)
			}
			return auth.JobFor(u), nil
		}})
}

// migrationAccounts are the application's account use cases a migration
// writes the source's users, groups and grants through.
type migrationAccounts struct {
	app   *app.App
	store *meta.Store
}

func (m migrationAccounts) UserID(_ context.Context, _ *auth.Principal, username string) (string, error) {
	var id string
	err := m.store.View(func(tx *meta.Tx) error {
		u, err := tx.UserByName(username)
		if errors.Is(err, meta.ErrNotFound) {
			return nil
		}
		if err == nil {
			id = u.ID
		}
		return err
	})
	return id, err
}

// CreateUser makes a local user with a random password nobody knows and
// a password change required (an administrator resets it before they
// sign in), or a directory's user without a password.
func (m migrationAccounts) CreateUser(ctx context.Context, p *auth.Principal, username, email string, admin bool, source string) (string, error) {
	role := meta.RoleUser
	if admin {
		role = meta.RoleAdmin
	}
	if email == "" {
		email = username + "@migrated.invalid"
	}
	in := app.NewUser{Username: username, Email: email, Role: role, Source: source}
	if source == meta.SourceLocal {
		secret := make([]byte, 24)
		_, _ = rand.Read(secret)
		in.Password, in.MustChangePassword = "Mg-"+hex.EncodeToString(secret), true
	}
	u, _, err := m.app.CreateUser(ctx, p, in)
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

func (m migrationAccounts) SignsIn(source string) bool {
	switch source {
	case meta.SourceLDAP:
		return m.app.DirectoryInfo != nil
	case meta.SourceOIDC:
		return m.app.OIDC != nil
	}
	return true
}

func (m migrationAccounts) GroupID(_ context.Context, _ *auth.Principal, name string) (string, error) {
	var id string
	err := m.store.View(func(tx *meta.Tx) error {
		gs, err := tx.Groups()
		for _, g := range gs {
			if g.Name == name {
				id = g.ID
			}
		}
		return err
	})
	return id, err
}

func (m migrationAccounts) CreateGroup(ctx context.Context, p *auth.Principal, name, description string) (string, error) {
	g, _, err := m.app.CreateGroup(ctx, p, app.NewGroup{Name: name, Description: description})
	if err != nil {
		return "", err
	}
	return g.ID, nil
}

func (m migrationAccounts) AddMembers(ctx context.Context, p *auth.Principal, groupID string, userIDs []string) error {
	_, _, err := m.app.AddGroupMembers(ctx, p, groupID, userIDs)
	return err
}

func (m migrationAccounts) Grant(ctx context.Context, p *auth.Principal, repoID, userID, groupID string, actions []string) error {
	_, _, err := m.app.CreatePermission(ctx, p, app.NewPermission{RepositoryID: repoID, UserID: userID, GroupID: groupID, Permissions: actions})
	if errors.Is(err, meta.ErrConflict) {
		return nil // granted already
	}
	return err
}
