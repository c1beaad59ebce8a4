package meta

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// Users from a directory (LDAP): an origin that checked a user's password
// with the directory creates or updates the local user and its
// memberships in one command, decided on what it read (meta.Decide).

// The directory's commands: a user created or updated from it, a user
// it no longer has disabled, and the result of a sync kept.
const (
	CmdUserProvision   CmdType = 35
	CmdUserDisable     CmdType = 36
	CmdDirectorySynced CmdType = 37
	CmdUserDisplayName CmdType = 38
)

// Where a user's password is checked (User.Source).
const (
	SourceLocal = "local" // here (also "": records from before sources)
	SourceLDAP  = "ldap"
	SourceOIDC  = "oidc"
)

func init() {
	declareCommand(CmdUserProvision, func() Command { return new(UserProvision) })
	declareCommand(CmdUserDisable, func() Command { return new(UserDisable) })
	declareCommand(CmdDirectorySynced, func() Command { return new(DirectorySynced) })
	declareCommand(CmdUserDisplayName, func() Command { return new(UserDisplayName) })
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
		u.DisplayName = old.DisplayName // UserDisplayName's alone
		u.UpdatedAt = c.At
	case errors.Is(err, ErrNotFound):
		u.DisplayName = ""
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
	if old != nil && old.DisabledBy == DisabledByDirectory {
		u.Disabled, u.DisabledBy = false, "" // the directory vouches for the user again
	} else if old != nil {
		u.Disabled, u.DisabledBy = old.Disabled, old.DisabledBy
	}
	return tx.putRec(KindUser, u.ID, u)
}

// Who disabled a user (User.DisabledBy).
const (
	DisabledByDirectory = "directory" // gone from it; a sign-in it vouches for enables the user again
	DisabledByAdmin     = "admin"     // only an administrator enables the user again
)

// UserDisable disables a user (Disabled) or enables one again. Disabling
// ends the user's sessions and revokes its API tokens (so an edge of any
// build stops them), and its password is refused here and at edges. The
// last administrator is not disabled. A directory disables only its own
// users.
type UserDisable struct {
	ID       string    `json:"id"`
	Disabled bool      `json:"disabled"`
	By       string    `json:"by"` // DisabledByDirectory or DisabledByAdmin
	At       time.Time `json:"at"`
}

func (*UserDisable) Type() CmdType { return CmdUserDisable }
func (*UserDisable) Scope() string { return "" }

func (c *UserDisable) apply(tx *Tx) error {
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	if c.By != DisabledByAdmin && c.By != DisabledByDirectory {
		return Invalidf("unknown disabler %q", c.By)
	}
	if !c.Disabled {
		u.Disabled, u.DisabledBy, u.UpdatedAt = false, "", c.At
		return tx.putRec(KindUser, u.ID, u)
	}
	if c.By == DisabledByDirectory && (u.Source == "" || u.Source == SourceLocal) {
		return Invalidf("user %s is a local user: the directory does not disable it", u.Username)
	}
	if err := tx.keepAdmin(u); err != nil {
		return err
	}
	for _, id := range tx.prefixKeys(bUserSessions, key(u.ID, "")) {
		if err := (&SessionRevoke{ID: id, At: c.At}).apply(tx); err != nil {
			return err
		}
	}
	if err := tx.delAll(KindToken, tx.prefixKeys(bUserTokens, key(u.ID, ""))); err != nil {
		return err
	}
	if u.DisabledBy != DisabledByAdmin { // an administrator's disabling stands
		u.DisabledBy = c.By
	}
	u.Disabled, u.UpdatedAt = true, c.At
	return tx.putRec(KindUser, u.ID, u)
}

// DirectorySync is the result of a sync of the directory users.
type DirectorySync struct {
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Users     int       `json:"users"`    // directory users looked up
	Updated   int       `json:"updated"`  // whose email, role or groups changed
	Disabled  int       `json:"disabled"` // the directory no longer has
	Error     string    `json:"error,omitempty"`
}

// DirectorySynced keeps the result of the last sync (the last successful
// one's too), which every origin then reports.
type DirectorySynced struct {
	Result DirectorySync `json:"result"`
}

func (*DirectorySynced) Type() CmdType { return CmdDirectorySynced }
func (*DirectorySynced) Scope() string { return "" }

const (
	stateDirectorySync   = "directory_sync"
	stateDirectorySynced = "directory_synced" // the last without an error
)

func (c *DirectorySynced) apply(tx *Tx) error {
	if err := tx.putRec(KindState, stateDirectorySync, c.Result); err != nil {
		return err
	}
	if c.Result.Error != "" {
		return nil
	}
	return tx.putRec(KindState, stateDirectorySynced, c.Result)
}

// DirectorySyncs are the last sync's result and the last successful
// one's (nil: none yet).
func (tx *Tx) DirectorySyncs() (last, lastOK *DirectorySync) {
	read := func(key string) *DirectorySync {
		raw, _ := tx.lookup(Space(KindState), key)
		if raw == nil {
			return nil
		}
		var r DirectorySync
		if json.Unmarshal(raw, &r) != nil {
			return nil
		}
		return &r
	}
	return read(stateDirectorySync), read(stateDirectorySynced)
}

// MaxDisplayName bounds User.DisplayName, in bytes.
const MaxDisplayName = 256

// UserDisplayName sets a user's display name (a directory's or provider's
// name claim, or the user's own choice; "" clears it). A command of its
// own, not a field of UserProvision or UserUpdate: a build that does not
// know it refuses it whole (ErrUpgrading) instead of dropping the field
// and diverging.
type UserDisplayName struct {
	ID          string    `json:"id"`
	DisplayName string    `json:"display_name"`
	At          time.Time `json:"at"`
}

func (*UserDisplayName) Type() CmdType { return CmdUserDisplayName }
func (*UserDisplayName) Scope() string { return "" }

func (c *UserDisplayName) apply(tx *Tx) error {
	if len(c.DisplayName) > MaxDisplayName {
		return Invalidf("a display name is at most %d bytes", MaxDisplayName)
	}
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	u.DisplayName, u.UpdatedAt = c.DisplayName, c.At
	return tx.putRec(KindUser, u.ID, u)
}
