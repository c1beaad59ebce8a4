package origin

// Sign-in with a company directory (LDAP): its settings, and the
// authenticator's directory over shared/auth/ldap. Origins only: edges
// ask an origin to check passwords.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/auth/ldap"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/meta"
)

// LDAPConfig is the directory users sign in with; empty URL: none.
type LDAPConfig struct {
	URL, CAFile, BindDN, BindPassword, BaseDN, UserFilter string
	GroupBaseDN, GroupFilter, GroupAttribute              string
	StartTLS                                              bool
	Timeout, SyncInterval                                 time.Duration
	MaxConns                                              int
	// DefaultRole, RoleGroups ("admin=admins,viewer=auditors") and
	// GroupMap ("directory name=Depot name,...") make directory users
	// Depot users (app.DirectoryPolicy).
	DefaultRole, RoleGroups, GroupMap string
}

func (l *LDAPConfig) bind(s *config.Set) {
	s.Group("Directory sign-in (LDAP)")
	s.String(&l.URL, "ldap-url", "LDAP_URL", "directory to check passwords with: ldap://host[:389] or ldaps://host[:636] (empty: no directory; only local users)")
	s.Bool(&l.StartTLS, "ldap-start-tls", "LDAP_START_TLS", "upgrade the ldap:// connection with StartTLS before binding")
	s.String(&l.CAFile, "ldap-ca-file", "LDAP_CA_FILE", "PEM certificates to trust for ldaps and StartTLS (default: the system's)")
	s.String(&l.BindDN, "ldap-bind-dn", "LDAP_BIND_DN", "service account that searches the directory (empty: an anonymous bind)")
	s.String(&l.BindPassword, "", "LDAP_BIND_PASSWORD", "the service account's password")
	s.String(&l.BaseDN, "ldap-base-dn", "LDAP_BASE_DN", "where users are searched, with the whole subtree below")
	s.String(&l.UserFilter, "ldap-user-filter", "LDAP_USER_FILTER", "filter that finds one user, {username} replaced by the escaped name, e.g. (&(objectClass=person)(sAMAccountName={username})) for Active Directory")
	s.String(&l.GroupBaseDN, "ldap-group-base-dn", "LDAP_GROUP_BASE_DN", "where groups are searched (default: --ldap-base-dn)")
	s.String(&l.GroupFilter, "ldap-group-filter", "LDAP_GROUP_FILTER", "filter of a user's groups, with {dn} and {username} replaced; one naming neither, e.g. (objectClass=groupOfNames), is ANDed with membership by member, uniqueMember or memberUid")
	s.String(&l.GroupAttribute, "ldap-group-attribute", "LDAP_GROUP_ATTRIBUTE", "attribute holding a group's name")
	s.String(&l.DefaultRole, "ldap-default-role", "DEPOT_LDAP_DEFAULT_ROLE", "role of a directory user no group gives one: admin, user or viewer")
	s.String(&l.RoleGroups, "ldap-role-groups", "DEPOT_LDAP_ROLE_GROUPS", "roles the members of directory groups get, e.g. admin=depot-admins,viewer=auditors (the highest wins)")
	s.String(&l.GroupMap, "ldap-group-map", "DEPOT_LDAP_GROUP_MAP", "Depot group names for directory groups, e.g. cn-devs=developers; other directory groups keep their name")
	s.Seconds(&l.SyncInterval, "ldap-sync-interval", "LDAP_SYNC_INTERVAL", "seconds between syncs of the directory users (groups, roles; users the directory no longer has are disabled, their sessions and API tokens revoked); 0: none")
	s.Duration(&l.Timeout, "ldap-timeout", "DEPOT_LDAP_TIMEOUT", "bound on each directory operation and on the wait for a connection")
	s.Count(&l.MaxConns, "ldap-max-conns", "DEPOT_LDAP_MAX_CONNS", "connections to the directory open at once at most")
}

// policy parses the role and group settings.
func (l *LDAPConfig) policy() (app.DirectoryPolicy, error) {
	return policy("--ldap", l.DefaultRole, l.RoleGroups, l.GroupMap)
}

// policy parses the role and group settings of a directory or provider
// (their flags start with prefix).
func policy(prefix, defaultRole, roleGroups, groupMap string) (app.DirectoryPolicy, error) {
	p := app.DirectoryPolicy{DefaultRole: meta.Role(defaultRole), Roles: map[string]meta.Role{}, Groups: map[string]string{}}
	if p.DefaultRole != "" && !p.DefaultRole.Valid() {
		return p, fmt.Errorf("%s-default-role %q: want admin, user or viewer", prefix, defaultRole)
	}
	roles, err := pairs(prefix+"-role-groups", roleGroups)
	if err != nil {
		return p, err
	}
	for role, group := range roles {
		if !meta.Role(role).Valid() {
			return p, fmt.Errorf("%s-role-groups: %q is not a role (admin, user, viewer)", prefix, role)
		}
		for _, g := range group {
			p.Roles[strings.ToLower(g)] = meta.Role(role)
		}
	}
	groups, err := pairs(prefix+"-group-map", groupMap)
	if err != nil {
		return p, err
	}
	for dir, depot := range groups {
		if len(depot) != 1 {
			return p, fmt.Errorf("%s-group-map: group %q is mapped twice", prefix, dir)
		}
		p.Groups[strings.ToLower(dir)] = depot[0]
	}
	return p, nil
}

// pairs reads "k=v,k=v" into k -> [v...].
func pairs(flag, s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if k, v = strings.TrimSpace(k), strings.TrimSpace(v); !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s: %q is not name=value", flag, part)
		}
		out[k] = append(out[k], v)
	}
	return out, nil
}

// directory opens the directory of cfg (nil when none is set).
func (l *LDAPConfig) directory() (*ldap.Directory, error) {
	if l.URL == "" {
		return nil, nil
	}
	return ldap.New(ldap.Config{URL: l.URL, StartTLS: l.StartTLS, CAFile: l.CAFile, BindDN: l.BindDN, BindPassword: l.BindPassword,
		BaseDN: l.BaseDN, UserFilter: l.UserFilter, GroupBaseDN: l.GroupBaseDN, GroupFilter: l.GroupFilter,
		GroupAttribute: l.GroupAttribute, Timeout: l.Timeout, MaxConns: l.MaxConns})
}

// identityOf is a directory's user as the authenticator takes it.
func identityOf(id *ldap.Identity) *auth.Identity {
	return &auth.Identity{Source: meta.SourceLDAP, Username: id.Username, Email: id.Email, Name: id.Name, Groups: id.Groups}
}

// ldapDirectory is the authenticator's directory over an LDAP one.
type ldapDirectory struct{ d *ldap.Directory }

func (l ldapDirectory) Authenticate(ctx context.Context, username, password string) (*auth.Identity, error) {
	id, err := l.d.Authenticate(ctx, username, password)
	switch {
	case errors.Is(err, ldap.ErrInvalidCredentials):
		return nil, auth.ErrBadCredentials
	case err != nil:
		return nil, fmt.Errorf("%w: %v", auth.ErrDirectoryUnavailable, err)
	}
	return identityOf(id), nil
}

// Lookup reads a user for the sync (app.DirectoryLookup).
func (l ldapDirectory) Lookup(ctx context.Context, username string) (*auth.Identity, error) {
	id, err := l.d.Lookup(ctx, username)
	switch {
	case errors.Is(err, ldap.ErrNotFound):
		return nil, app.ErrNoDirectoryUser
	case err != nil:
		return nil, fmt.Errorf("%w: %v", auth.ErrDirectoryUnavailable, err)
	}
	return identityOf(id), nil
}

// syncDirectory syncs the directory users every SyncInterval while this
// origin leads (leaderJobs): one sync at a time in the cluster.
func (o *Origin) syncDirectory(ctx context.Context, a *app.App) {
	if o.directory == nil || o.cfg.LDAP.SyncInterval <= 0 {
		return
	}
	every(ctx, o.cfg.LDAP.SyncInterval, func() {
		res := a.SyncDirectory(ctx, meta.SourceLDAP, ldapDirectory{o.directory}, o.directorySync)
		if res.Error != "" && ctx.Err() == nil {
			o.log.Warn("directory sync failed: no user was disabled after the failure; the next sync tries again",
				"users", res.Users, "updated", res.Updated, "disabled", res.Disabled, "err", res.Error)
		} else if res.Updated > 0 || res.Disabled > 0 {
			o.log.Info("directory sync", "users", res.Users, "updated", res.Updated, "disabled", res.Disabled)
		}
	})
}
