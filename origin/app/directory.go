package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/progress"
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
	// Roles gives the members of a directory group a role (group name in
	// lower case -> role); the highest a user's groups give wins.
	Roles map[string]meta.Role
	// Groups renames directory groups into Depot groups (directory name
	// in lower case -> Depot group name); the others keep their name.
	Groups map[string]string
}

// maxDirectoryGroups bounds the Depot groups one user is given.
const maxDirectoryGroups = 200

// roleRank orders roles for "the highest wins".
var roleRank = map[meta.Role]int{meta.RoleViewer: 1, meta.RoleUser: 2, meta.RoleAdmin: 3}

// role is the role id's groups give, else the default.
func (p DirectoryPolicy) role(groups []string) meta.Role {
	role := p.DefaultRole
	if role == "" {
		role = meta.RoleUser
	}
	best := meta.Role("")
	for _, g := range groups {
		if r, ok := p.Roles[strings.ToLower(g)]; ok && roleRank[r] > roleRank[best] {
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
		if mapped, ok := p.Groups[strings.ToLower(g)]; ok {
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
	u, _, err := a.provision(ctx, id)
	return u, err
}

// provision is ProvisionDirectoryUser, saying whether it changed anything.
func (a *App) provision(ctx context.Context, id *auth.Identity) (*meta.User, bool, error) {
	if checkUsername(id.Username) != nil {
		return nil, false, fmt.Errorf("%w: the directory's username %q is not a valid Depot username", auth.ErrBadCredentials, id.Username)
	}
	email := id.Email
	if checkEmail(email) != nil {
		email = "" // the directory's business; not worth refusing the user
	}
	var user *meta.User
	changed := false
	_, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		changed = false
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
		policy := a.Directory
		if id.Source == meta.SourceOIDC {
			policy = a.OIDCPolicy
		}
		cmd := &meta.UserProvision{User: *user, At: a.now()}
		cmd.User.Email, cmd.User.Role = email, policy.role(id.Groups)
		for _, name := range policy.groupNames(id.Groups) {
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
		if err == nil && (!u.Disabled || u.DisabledBy == meta.DisabledByAdmin) && u.Email == cmd.User.Email && u.Role == cmd.User.Role && slices.Equal(u.DirectoryGroups, cmd.Groups) {
			return nil, nil // as it was: nothing to commit
		}
		changed = true
		return cmd, nil
	})
	if err != nil {
		return nil, false, err
	}
	if name := cleanDisplayName(id.Name); name != "" {
		var now *meta.User
		if err := a.view(func(tx *meta.Tx) error { var err error; now, err = tx.User(user.ID); return err }); err != nil {
			return nil, false, err
		}
		if now.DisplayName != name {
			// A cluster part-way through an upgrade does not know the
			// command yet: the name waits for a later sign-in.
			if _, err := a.commit(ctx, &meta.UserDisplayName{ID: user.ID, DisplayName: name, At: a.now()}); err != nil && !errors.Is(err, meta.ErrUpgrading) {
				return nil, false, err
			}
			changed = true
		}
	}
	err = a.view(func(tx *meta.Tx) error { var err error; user, err = tx.User(user.ID); return err })
	return user, changed, err
}

// ErrNoDirectoryUser is a directory's answer that it has no such user.
var ErrNoDirectoryUser = errors.New("the directory has no such user")

// DirectoryLookup reads users from the directory, without their password
// (the sync): ErrNoDirectoryUser, or auth.ErrDirectoryUnavailable.
type DirectoryLookup interface {
	Lookup(ctx context.Context, username string) (*auth.Identity, error)
}

// SyncDirectory brings every directory user (source) up to date with the
// directory: email, role and groups as a sign-in would; a user the
// directory no longer has is disabled (sessions ended, API tokens
// revoked). A directory that fails ends the sync there, disabling no one
// more. The result is kept in the log, where every origin reads it
// (DirectoryStatus). Run by one origin at a time (the leader's job).
func (a *App) SyncDirectory(ctx context.Context, source string, dir DirectoryLookup, track *progress.Tracker) meta.DirectorySync {
	res := meta.DirectorySync{StartedAt: a.now()}
	var users []meta.User
	err := a.view(func(tx *meta.Tx) error {
		all, err := tx.Users()
		for _, u := range all {
			if u.Source == source {
				users = append(users, u)
			}
		}
		return err
	})
	track.Start(int64(len(users)))
	for _, u := range users {
		if err != nil {
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
		var id *auth.Identity
		id, err = dir.Lookup(ctx, u.Username)
		if err == nil || errors.Is(err, ErrNoDirectoryUser) {
			res.Users++ // the directory answered for this one
		}
		switch {
		case errors.Is(err, ErrNoDirectoryUser):
			err = nil
			if u.Disabled {
				break
			}
			if _, derr := a.commit(ctx, &meta.UserDisable{ID: u.ID, Disabled: true, By: meta.DisabledByDirectory, At: a.now()}); derr != nil {
				if !errors.Is(derr, meta.ErrLastAdmin) {
					err = derr
				}
				break // the last administrator stays
			}
			res.Disabled++
		case err == nil:
			var changed bool
			if _, changed, err = a.provision(ctx, id); changed {
				res.Updated++
			}
			if errors.Is(err, auth.ErrBadCredentials) {
				err = nil // a name the directory and a local user share: the local user's
			}
		}
		track.Add(1, 0, 0)
	}
	track.End()
	if err != nil {
		res.Error = err.Error()
	}
	res.EndedAt = a.now()
	if _, cerr := a.commit(context.WithoutCancel(ctx), &meta.DirectorySynced{Result: res}); cerr != nil && res.Error == "" {
		res.Error = "keeping the result: " + cerr.Error()
	}
	return res
}

// DirectoryStatus is the directory sign-in as GET /admin/directory shows
// it.
type DirectoryStatus struct {
	LDAP *LDAPStatus `json:"ldap"` // null: no directory
}

// LDAPStatus is the LDAP directory's settings and syncs.
type LDAPStatus struct {
	URL                 string              `json:"url"`
	BaseDN              string              `json:"base_dn"`
	SyncIntervalSeconds int64               `json:"sync_interval_seconds"` // 0: no sync
	LastSync            *meta.DirectorySync `json:"last_sync"`
	LastSuccessfulSync  *meta.DirectorySync `json:"last_successful_sync"`
	// Sync is the progress of the sync this origin runs or ran last (the
	// leader runs them).
	Sync progress.Status `json:"sync"`
}

// DirectoryStatus reports the directory sign-in (administrators only).
func (a *App) DirectoryStatus(_ context.Context, p *auth.Principal) (DirectoryStatus, error) {
	if err := requireAdmin(p); err != nil {
		return DirectoryStatus{}, err
	}
	if a.DirectoryInfo == nil {
		return DirectoryStatus{}, nil
	}
	st := *a.DirectoryInfo()
	err := a.view(func(tx *meta.Tx) error {
		st.LastSync, st.LastSuccessfulSync = tx.DirectorySyncs()
		return nil
	})
	return DirectoryStatus{LDAP: &st}, err
}

func sourceName(s string) string {
	if s == "" {
		return meta.SourceLocal
	}
	return s
}
