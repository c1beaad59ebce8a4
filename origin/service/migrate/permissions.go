package migrate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Accounts are the application's use cases a migration of permissions
// goes through, as the migration's administrator.
type Accounts interface {
	// UserID is the id of the user of that name ("": none).
	UserID(ctx context.Context, p *auth.Principal, username string) (string, error)
	// CreateUser makes a user without a usable password: a local one
	// (source local) an administrator resets before they sign in, or a
	// directory's (ldap, oidc) who signs in with the directory's.
	CreateUser(ctx context.Context, p *auth.Principal, username, email string, admin bool, source string) (string, error)
	// SignsIn reports whether users of a directory source sign in here
	// (the directory is configured).
	SignsIn(source string) bool
	// GroupID is the id of the group of that name ("": none).
	GroupID(ctx context.Context, p *auth.Principal, name string) (string, error)
	CreateGroup(ctx context.Context, p *auth.Principal, name, description string) (string, error)
	AddMembers(ctx context.Context, p *auth.Principal, groupID string, userIDs []string) error
	// Grant grants actions (read, write, delete, admin) on a repository
	// to a user or a group.
	Grant(ctx context.Context, p *auth.Principal, repoID, userID, groupID string, actions []string) error
}

// Actions maps an Artifactory permission target's actions to the
// registry's: manage (Admin) to admin, write (Deploy/Cache), annotate
// and delete to write, read to read.
func Actions(af []string) []string {
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, a := range af {
		switch strings.ToLower(a) {
		case "read", "r":
			add(meta.ActionRead)
		case "write", "w", "annotate", "n", "delete", "d":
			add(meta.ActionRead)
			add(meta.ActionWrite)
		case "manage", "m":
			add(meta.ActionRead)
			add(meta.ActionWrite)
			add(meta.ActionAdmin)
		}
	}
	return out
}

// Source is where a source's user signs in here, by their realm there:
// a user of the source's LDAP directory is an LDAP user here, one of its
// single sign-on (SAML, OAuth, SCIM-provisioned) an OpenID Connect user;
// others (internal, crowd) are local users.
func Source(realm string) string {
	switch strings.ToLower(realm) {
	case "ldap":
		return meta.SourceLDAP
	case "saml", "oauth", "oidc", "scim":
		return meta.SourceOIDC
	}
	return meta.SourceLocal
}

// permissions moves the source's users, groups and the permission
// targets that cover the repositories migrated, once they are moved.
func (j *job) permissions(ctx context.Context) error {
	acc := j.s.cfg.Accounts
	moved := map[string]*meta.Repository{} // the source's key -> the repository here
	_ = j.s.cfg.Store.View(func(tx *meta.Tx) error {
		for _, key := range j.m.Done {
			target := j.m.Targets[key]
			if target == "" {
				target = key
			}
			if repo, err := tx.RepoByName(target); err == nil {
				moved[key] = repo
			}
		}
		return nil
	})
	if acc == nil {
		j.logf("warn", "permissions: not migrated: this node cannot write accounts")
		return nil
	}
	users, err := j.src.Users(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's users: %w", err)
	}
	ids := map[string]string{} // the source's username -> user id here
	local, directory := 0, 0
	for _, u := range users {
		if u.Name == "anonymous" || u.Name == "_internal" || u.Name == "access-admin" {
			continue
		}
		id, err := acc.UserID(ctx, j.p, u.Name)
		if err != nil {
			return err
		}
		if id == "" {
			source := Source(u.Realm)
			if id, err = acc.CreateUser(ctx, j.p, u.Name, u.Email, u.Admin, source); err != nil {
				j.logf("warn", "user %s: not created: %v", u.Name, err)
				continue
			}
			realm := cmp.Or(u.Realm, "internal")
			switch {
			case source == meta.SourceLocal:
				local++
				j.logf("info", "user %s created (realm %s at the source): an administrator resets the password before they sign in", u.Name, realm)
			case acc.SignsIn(source):
				directory++
				j.logf("info", "user %s created as an %s user (realm %s at the source): they sign in with the directory's password, which decides their role and directory groups", u.Name, source, realm)
			default:
				directory++
				j.logf("warn", "user %s created as an %s user (realm %s at the source), but no %s sign-in is configured here: they cannot sign in until it is", u.Name, source, realm, source)
			}
		}
		ids[u.Name] = id
	}
	groups, err := j.src.Groups(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's groups: %w", err)
	}
	gids := map[string]string{}
	for _, g := range groups {
		id, err := acc.GroupID(ctx, j.p, g.Name)
		if err == nil && id == "" {
			id, err = acc.CreateGroup(ctx, j.p, g.Name, g.Description)
		}
		if err != nil {
			j.logf("warn", "group %s: not created: %v", g.Name, err)
			continue
		}
		gids[g.Name] = id
		var members []string
		for _, n := range g.UserNames {
			if uid := ids[n]; uid != "" {
				members = append(members, uid)
			}
		}
		if len(members) > 0 {
			if err := acc.AddMembers(ctx, j.p, id, members); err != nil {
				j.logf("warn", "group %s: members not added: %v", g.Name, err)
			}
		}
	}
	targets, err := j.src.Permissions(ctx)
	if err != nil {
		return fmt.Errorf("listing the source's permission targets: %w", err)
	}
	grants := 0
	for _, pt := range targets {
		var repos []*meta.Repository
		for key, repo := range moved {
			if covers(pt.Repo.Repositories, key) {
				repos = append(repos, repo)
			}
		}
		if len(repos) == 0 {
			continue
		}
		if inc := pt.Repo.Include; len(inc) > 0 && !(len(inc) == 1 && inc[0] == "**") {
			j.logf("warn", "permission target %s: its patterns (%s) are not kept: its grants cover whole repositories here", pt.Name, strings.Join(inc, ", "))
		}
		grant := func(userID, groupID, who string, actions []string) {
			acts := Actions(actions)
			if len(acts) == 0 {
				return
			}
			for _, repo := range repos {
				if err := acc.Grant(ctx, j.p, repo.ID, userID, groupID, acts); err != nil {
					j.logf("warn", "permission target %s: %s on %s: %v", pt.Name, who, repo.Name, err)
					continue
				}
				grants++
			}
		}
		for name, actions := range pt.Repo.Actions.Users {
			if id := ids[name]; id != "" {
				grant(id, "", "user "+name, actions)
			}
		}
		for name, actions := range pt.Repo.Actions.Groups {
			if id := gids[name]; id != "" {
				grant("", id, "group "+name, actions)
			}
		}
	}
	j.mu.Lock()
	j.m.Permissions = fmt.Sprintf("%d local users created (an administrator resets their passwords before they sign in), %d directory users created (they sign in with the directory's), %d groups, %d grants from %d permission targets",
		local, directory, len(gids), grants, len(targets))
	j.mu.Unlock()
	j.logf("info", "permissions: %s", j.m.Permissions)
	return nil
}

// covers reports whether a permission target's repositories name key.
func covers(repos []string, key string) bool {
	for _, r := range repos {
		if r == key || r == "ANY" || r == "ANY LOCAL" {
			return true
		}
	}
	return false
}
