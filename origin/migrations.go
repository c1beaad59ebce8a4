package origin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

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
// a password change required: an administrator resets it (or the
// directory's sign-in takes over) before they sign in.
func (m migrationAccounts) CreateUser(ctx context.Context, p *auth.Principal, username, email string, admin bool) (string, error) {
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	role := meta.RoleUser
	if admin {
		role = meta.RoleAdmin
	}
	if email == "" {
		email = username + "@migrated.invalid"
	}
	u, _, err := m.app.CreateUser(ctx, p, app.NewUser{Username: username, Email: email, Password: "Mg-" + hex.EncodeToString(secret),
		Role: role, MustChangePassword: true})
	if err != nil {
		return "", err
	}
	return u.ID, nil
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
