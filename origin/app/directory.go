package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Users of a directory (LDAP) or an identity provider (OIDC) are local
// users whose password is checked elsewhere: created at their first
// sign-in, their email, role and directory groups brought up to date at
// each later one. Their role comes from their directory groups
// (DirectoryPolicy.Roles), else the default; each directory group is a
// Depot group of the same name (or the one Groups maps it to), made when
// missing, so a permission granted to that group applies to its members.

// DirectoryPolicy is how directory users become Depot users.
type DirectoryPolicy struct {
	// DefaultRole is the role of a directory user no group gives one
	// (meta.RoleUser when empty).
	DefaultRole meta.Role
	// Roles gives the members of a directory group a role (group name,
	// case-insensitive, -> role); the highest a user's groups give wins.
	Roles map[string]meta.Role
	// Groups renames directory groups into Depot groups (directory name,
	// case-insensitive, -> Depot group name); the others keep their name.
	Groups map[string]string
}

// maxDirectoryGroups bounds the Depot groups one user is given.
const maxDirectoryGroups = 200

// roleRank orders roles for "the highest wins".
var roleRank = map[meta.Role]int{meta.RoleViewer: 1, meta.RoleUser: 2, meta.RoleAdmin: 3}

// lookupFold reads m[k] with k compared without case.
func lookupFold[V any](m map[string]V, k string) (V, bool) {
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// role is the role id's groups give, else the default.
func (p DirectoryPolicy) role(groups []string) meta.Role {
	role := p.DefaultRole
	if role == "" {
		role = meta.RoleUser
	}
	best := meta.Role("")
	for _, g := range groups {
		if r, ok := lookupFold(p.Roles, g); ok && roleRank[r] > roleRank[best] {
			best = r
		}
	}
	if best != "" {
		return best
	}
	return role
}

// groupNames are the Depot groups a user's directory groups map to,
// valid and distinct (case-insensitively), at most maxDirectoryGroups.
func (p DirectoryPolicy) groupNames(groups []string) []string {
	var names []string
	for _, g := range groups {
		name := g
		if mapped, ok := lookupFold(p.Groups, g); ok {
			name = mapped
		}
		if !groupNameRE.MatchString(name) || slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) }) {
			continue
		}
		if names = append(names, name); len(names) == maxDirectoryGroups {
			break
		}
	}
	return names
}

// ProvisionDirectoryUser creates or updates the local user of a
// directory identity whose password the directory just accepted (called
// by the authenticator, at origins): no commit when nothing changed.
// A local user of that name is never taken over.
func (a *App) ProvisionDirectoryUser(ctx context.Context, id *auth.Identity) (*meta.User, error) {
	if checkUsername(id.Username) != nil {
		return nil, fmt.Errorf("%w: the directory's username %q is not a valid Depot username", auth.ErrBadCredentials, id.Username)
	}
	email := id.Email
	if checkEmail(email) != nil {
		email = "" // the directory's business; not worth refusing the user
	}
	var user *meta.User
	_, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		u, err := tx.UserByName(id.Username)
		switch {
		case err == nil && u.Source != id.Source:
			return nil, fmt.Errorf("%w: %s is a %s user here, not a %s one", auth.ErrBadCredentials, u.Username, sourceName(u.Source), id.Source)
		case err == nil:
			user = u
		case !errors.Is(err, meta.ErrNotFound):
			return nil, err
		default:
			user = &meta.User{ID: a.NewID(), Username: id.Username, Source: id.Source}
		}
		cmd := &meta.UserProvision{User: *user, At: a.now()}
		cmd.User.Email, cmd.User.Role = email, a.Directory.role(id.Groups)
		for _, name := range a.Directory.groupNames(id.Groups) {
			g, err := tx.GroupByRef(name)
			switch {
			case err == nil:
				cmd.Groups = append(cmd.Groups, g.ID)
			case errors.Is(err, meta.ErrNotFound):
				ng := meta.Group{ID: a.NewID(), Name: name, Description: "members from the directory (" + id.Source + ")"}
				cmd.NewGroups, cmd.Groups = append(cmd.NewGroups, ng), append(cmd.Groups, ng.ID)
			default:
				return nil, err
			}
		}
		slices.Sort(cmd.Groups)
		if err == nil && u.Email == cmd.User.Email && u.Role == cmd.User.Role && slices.Equal(u.DirectoryGroups, cmd.Groups) {
			return nil, nil // as it was: nothing to commit
		}
		return cmd, nil
	})
	if err != nil {
		return nil, err
	}
	err = a.view(func(tx *meta.Tx) error { var err error; user, err = tx.User(user.ID); return err })
	return user, err
}

func sourceName(s string) string {
	if s == "" {
		return meta.SourceLocal
	}
	return s
}
