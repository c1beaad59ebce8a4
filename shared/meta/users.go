package meta

import (
	"errors"
	"strings"
	"time"
)

// The user kind and its commands.
const (
	KindUser       Kind    = 1
	SpaceUserNames Space   = 20 // lower(username) -> user id
	CmdUserCreate  CmdType = 1
	CmdUserUpdate  CmdType = 2
	CmdUserDelete  CmdType = 3
)

var bAdmins = []byte("admins") // user id -> ""

func init() {
	declareKind(KindUser, kindDecl{Name: "users", Bucket: "users", Index: indexUser, Derived: [][]byte{bAdmins},
		Lookups: []lookupDecl{{SpaceUserNames, "usernames", "user_names"}}})
	declareCommand(CmdUserCreate, func() Command { return new(UserCreate) })
	declareCommand(CmdUserUpdate, func() Command { return new(UserUpdate) })
	declareCommand(CmdUserDelete, func() Command { return new(UserDelete) })
}

// Role is a built-in user role.
type Role string

// The three built-in roles.
const (
	RoleAdmin  Role = "admin"
	RoleUser   Role = "user"
	RoleViewer Role = "viewer"
)

// Valid reports whether r is a built-in role.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleUser || r == RoleViewer }

// User is an account. PasswordHash never leaves the process.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Email    string `json:"email"`
	// DisplayName is the person's name as people read it ("Alice
	// Example"), set only by UserDisplayName.
	DisplayName        string `json:"display_name,omitempty"`
	Role               Role   `json:"role"`
	PasswordHash       string `json:"password_hash,omitempty"`
	MustChangePassword bool   `json:"must_change_password,omitempty"`
	Source             string `json:"source,omitempty"` // local (default), ldap, oidc
	// DirectoryGroups are the groups a directory made the user a member
	// of (UserProvision): the ones it takes the user out of when the
	// directory no longer lists them.
	DirectoryGroups []string `json:"directory_groups,omitempty"`
	// Disabled: no credential of the user works (UserDisable), by an
	// administrator or by the directory (DisabledBy).
	Disabled   bool      `json:"disabled,omitempty"`
	DisabledBy string    `json:"disabled_by,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// UserCreate adds a user; the username must be free.
type UserCreate struct {
	User  User   `json:"user"`
	Actor *Actor `json:"actor,omitempty"`
}

// UserUpdate changes the given fields of a user. When RevokeSessions is set
// every session of the user but KeepSession is revoked (password change).
type UserUpdate struct {
	ID                 string    `json:"id"`
	Email              *string   `json:"email,omitempty"`
	PasswordHash       *string   `json:"password_hash,omitempty"`
	Role               *Role     `json:"role,omitempty"`
	MustChangePassword *bool     `json:"must_change_password,omitempty"`
	RevokeSessions     bool      `json:"revoke_sessions,omitempty"`
	KeepSession        string    `json:"keep_session,omitempty"`
	At                 time.Time `json:"at"`
}

// UserDelete removes a user with its tokens, sessions, grants and group
// memberships.
type UserDelete struct {
	ID string `json:"id"`
}

func (*UserCreate) Type() CmdType { return CmdUserCreate }
func (*UserUpdate) Type() CmdType { return CmdUserUpdate }
func (*UserDelete) Type() CmdType { return CmdUserDelete }
func (*UserCreate) Scope() string { return "" }
func (*UserUpdate) Scope() string { return "" }
func (*UserDelete) Scope() string { return "" }

func lower(s string) string { return strings.ToLower(s) }

func (c *UserCreate) apply(tx *Tx) error {
	u := c.User
	if u.ID == "" || u.Username == "" {
		return Invalidf("user id and username required")
	}
	if id, _ := tx.lookup(SpaceUserNames, lower(u.Username)); id != nil {
		return Conflictf("username %q is taken", u.Username)
	}
	if tx.exists(KindUser, u.ID) {
		return Conflictf("user id %q exists", u.ID)
	}
	if err := tx.putRec(KindUser, u.ID, u); err != nil {
		return err
	}
	return tx.emitUserCreated(&u, c.Actor)
}

func (c *UserUpdate) apply(tx *Tx) error {
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	if c.Email != nil {
		u.Email = *c.Email
	}
	if c.PasswordHash != nil {
		u.PasswordHash = *c.PasswordHash
	}
	if c.Role != nil {
		if !c.Role.Valid() {
			return Invalidf("unknown role %q", *c.Role)
		}
		if *c.Role != RoleAdmin {
			if err := tx.keepAdmin(u); err != nil {
				return err
			}
		}
		u.Role = *c.Role
	}
	if c.MustChangePassword != nil {
		u.MustChangePassword = *c.MustChangePassword
	}
	u.UpdatedAt = c.At
	if c.RevokeSessions {
		for _, id := range tx.prefixKeys(bUserSessions, key(u.ID, "")) {
			if id == c.KeepSession {
				continue
			}
			if err := (&SessionRevoke{ID: id, At: c.At}).apply(tx); err != nil {
				return err
			}
		}
	}
	return tx.putRec(KindUser, u.ID, u)
}

func (c *UserDelete) apply(tx *Tx) error {
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	if err := tx.keepAdmin(u); err != nil {
		return err
	}
	var grants []string
	for _, rest := range tx.prefixKeys(bPermSubject, key(userSubject(u.ID), "")) {
		grants = append(grants, lastPart(rest))
	}
	for _, err := range []error{
		tx.delAll(KindToken, tx.prefixKeys(bUserTokens, key(u.ID, ""))),
		tx.delAll(KindSession, tx.prefixKeys(bUserSessions, key(u.ID, ""))),
		tx.delAll(KindPermission, grants),
	} {
		if err != nil {
			return err
		}
	}
	for _, gid := range tx.prefixKeys(bMembers, key(u.ID, "")) {
		g, err := tx.Group(gid)
		if err != nil {
			return err
		}
		g.Members = without(g.Members, u.ID)
		if err := tx.putRec(KindGroup, g.ID, g); err != nil {
			return err
		}
	}
	return tx.delRec(KindUser, u.ID)
}

// keepAdmin refuses to take the admin role away from u (delete or
// demotion) when no other administrator would remain. It is checked here,
// in the command, and not only by the handler that decided: two admins
// removing each other at once both read "two admins" before either
// commits, and only the log order can tell which one comes second.
func (tx *Tx) keepAdmin(u *User) error {
	if u.Role != RoleAdmin {
		return nil
	}
	cur := tx.bucket(bAdmins).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if string(k) != u.ID {
			return nil
		}
	}
	return ErrLastAdmin
}

func indexUser(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[User](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceUserNames).Delete([]byte(lower(o.Username))); err != nil {
			return err
		}
		if err := tx.delKey(bAdmins, id); err != nil {
			return err
		}
	}
	if n != nil {
		if err := tx.setIndexEntry(SpaceUserNames, lower(n.Username), []byte(id)); err != nil {
			return err
		}
		if n.Role == RoleAdmin {
			return tx.setKey(bAdmins, id)
		}
	}
	return nil
}

// User returns a user by id.
func (tx *Tx) User(id string) (*User, error) { return getRec[User](tx, KindUser, id, "user") }

// UserByRef reads a user by id or, failing that, by username (usernames
// are unique), as the API takes either.
func (tx *Tx) UserByRef(ref string) (*User, error) {
	u, err := tx.User(ref)
	if errors.Is(err, ErrNotFound) {
		if byName, nerr := tx.UserByName(ref); nerr == nil {
			return byName, nil
		}
	}
	return u, err
}

// UserByName returns a user by username, case-insensitively.
func (tx *Tx) UserByName(name string) (*User, error) {
	id, _ := tx.lookup(SpaceUserNames, lower(name))
	if id == nil {
		return nil, NotFoundf("user %s", name)
	}
	return tx.User(string(id))
}

// Users lists all users ordered by username.
func (tx *Tx) Users() ([]User, error) { return byName(tx, SpaceUserNames, tx.User) }

// HasUsers reports whether any user exists (first start creates the admin).
func (tx *Tx) HasUsers() bool {
	k, _ := tx.space(Space(KindUser)).Cursor().First()
	return k != nil
}

// without returns ids without id (ids sorted).
func without(ids []string, id string) []string {
	out := make([]string, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// lastPart is what follows the last NUL of an index key.
func lastPart(k string) string { return k[strings.LastIndexByte(k, 0)+1:] }
