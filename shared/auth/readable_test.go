package auth

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// TestReadableIsCan: for every kind of caller, the repositories Readable
// lists are exactly those Can lets it read.
func TestReadableIsCan(t *testing.T) {
	s, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []meta.Command{
		&meta.UserCreate{User: meta.User{ID: "u1", Username: "ann", Role: meta.RoleUser, CreatedAt: t0, UpdatedAt: t0}},
		&meta.UserCreate{User: meta.User{ID: "u2", Username: "bob", Role: meta.RoleViewer, CreatedAt: t0, UpdatedAt: t0}},
		&meta.GroupCreate{Group: meta.Group{ID: "g1", Name: "devs", CreatedAt: t0}},
		&meta.GroupAddMembers{GroupID: "g1", UserIDs: []string{"u1", "u2"}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "pub", Format: "generic", Public: true, CreatedAt: t0}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r2", Name: "Two", Format: "generic", CreatedAt: t0}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r3", Name: "three", Format: "generic", CreatedAt: t0}},
		&meta.RepoCreate{Repo: meta.Repository{ID: "r4", Name: "four", Format: "generic", CreatedAt: t0}},
		&meta.PermissionCreate{Permission: meta.Permission{ID: "p1", RepositoryID: "r2", UserID: "u1", Permissions: []string{meta.ActionRead}, CreatedAt: t0}},
		&meta.PermissionCreate{Permission: meta.Permission{ID: "p2", RepositoryID: "r3", GroupID: "g1", Permissions: []string{meta.ActionDelete}, CreatedAt: t0}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	scopes := func(ss ...string) []Scope {
		out, err := ParseScopes(ss)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, p := range map[string]*Principal{
		"anonymous":              nil,
		"admin":                  {UserID: "a", Username: "root", Role: meta.RoleAdmin},
		"admin, global token":    {UserID: "a", Username: "root", Role: meta.RoleAdmin, TokenID: "t", Scopes: scopes("admin")},
		"admin, narrowed token":  {UserID: "a", Username: "root", Role: meta.RoleAdmin, TokenID: "t", Scopes: scopes("repository:read:two")},
		"admin, password change": {UserID: "a", Username: "root", Role: meta.RoleAdmin, MustChangePassword: true},
		"user":                   {UserID: "u1", Username: "ann", Role: meta.RoleUser},
		"user, read token":       {UserID: "u1", Username: "ann", Role: meta.RoleUser, TokenID: "t", Scopes: scopes("repository:read")},
		"user, narrowed token":   {UserID: "u1", Username: "ann", Role: meta.RoleUser, TokenID: "t", Scopes: scopes("repository:write:three")},
		"viewer via group":       {UserID: "u2", Username: "bob", Role: meta.RoleViewer},
		"unknown role":           {UserID: "u1", Username: "ann", Role: "guest"},
	} {
		err := s.View(func(tx *meta.Tx) error {
			var want []string
			for _, id := range tx.RepoIDs() {
				repo, err := tx.Repo(id)
				if err != nil {
					return err
				}
				if ok, err := Can(tx, p, repo, meta.ActionRead); err != nil {
					return err
				} else if ok {
					want = append(want, id)
				}
			}
			got, err := Readable(tx, p)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Readable = %v, Can says %v", name, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
