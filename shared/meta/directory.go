package meta

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// Users from a directory (LDAP): an origin that checked a user's password
// with the directory creates or updates the local user and its
// memberships in one command, decided on what it read (meta.Decide).

// CmdUserProvision creates or updates a directory user.
const CmdUserProvision CmdType = 35

// Where a user's password is checked (User.Source).
const (
	SourceLocal = "local" // here (also "": records from before sources)
	SourceLDAP  = "ldap"
	SourceOIDC  = "oidc"
)

func init() {
	declareCommand(CmdUserProvision, func() Command { return new(UserProvision) })
}

// UserProvision creates User (when no user has its id) or updates the
// directory user of that id (email, role, the groups the directory
// gives), creates the groups in NewGroups, and makes the user's
// memberships of the groups the directory gives exactly Groups: it joins
// those it is not in and leaves those the directory gave it before
// (User.DirectoryGroups) and gives no more. Memberships an administrator
// gave stay.
type UserProvision struct {
	User      User      `json:"user"`
	NewGroups []Group   `json:"new_groups,omitempty"`
	Groups    []string  `json:"groups"` // group ids, NewGroups' included
	At        time.Time `json:"at"`
}

func (*UserProvision) Type() CmdType { return CmdUserProvision }
func (*UserProvision) Scope() string { return "" }

func (c *UserProvision) apply(tx *Tx) error {
	u := c.User
	if u.ID == "" || u.Username == "" || u.Source == "" || u.Source == SourceLocal || u.PasswordHash != "" {
		return Invalidf("a directory user needs an id, a username and a source other than local, and no password")
	}
	for _, g := range c.NewGroups {
		if err := (&GroupCreate{Group: Group{ID: g.ID, Name: g.Name, Description: g.Description, CreatedAt: c.At}}).apply(tx); err != nil {
			return err
		}
	}
	old, err := tx.User(u.ID)
	var before []string
	switch {
	case err == nil:
		if old.Source != u.Source || !strings.EqualFold(old.Username, u.Username) {
			return Conflictf("user %s is not the %s user %s", u.ID, u.Source, u.Username)
		}
		if old.Role == RoleAdmin && u.Role != RoleAdmin {
			if err := tx.keepAdmin(old); err != nil {
				u.Role = old.Role // the last administrator stays one
			}
		}
		before = old.DirectoryGroups
		u.CreatedAt, u.MustChangePassword = old.CreatedAt, false
		u.UpdatedAt = c.At
	case errors.Is(err, ErrNotFound):
		if err := (&UserCreate{User: User{ID: u.ID, Username: u.Username, Email: u.Email, Role: u.Role, Source: u.Source,
			CreatedAt: c.At, UpdatedAt: c.At}}).apply(tx); err != nil {
			return err
		}
		u.CreatedAt, u.UpdatedAt = c.At, c.At
	default:
		return err
	}
	if !u.Role.Valid() {
		return Invalidf("unknown role %q", u.Role)
	}
	groups := sortedSet(c.Groups)
	for _, id := range groups {
		g, err := tx.Group(id)
		if err != nil {
			return err
		}
		if !slices.Contains(g.Members, u.ID) {
			g.Members = sortedSet(append(g.Members, u.ID))
			if err := tx.putRec(KindGroup, g.ID, g); err != nil {
				return err
			}
		}
	}
	for _, id := range before {
		if slices.Contains(groups, id) {
			continue
		}
		g, err := tx.Group(id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if i := slices.Index(g.Members, u.ID); i >= 0 {
			g.Members = slices.Delete(slices.Clone(g.Members), i, i+1)
			if err := tx.putRec(KindGroup, g.ID, g); err != nil {
				return err
			}
		}
	}
	u.DirectoryGroups = groups
	return tx.putRec(KindUser, u.ID, u)
}
