package meta

import (
	"encoding/json"
	"sort"
	"time"
)

// The permission kind (grants) and its commands.
const (
	KindPermission      Kind    = 5
	CmdPermissionCreate CmdType = 10
	CmdPermissionDelete CmdType = 11
)

var (
	bPermSubject = []byte("perm_subj") // subject \0 repo \0 permission id -> ""
	bPermRepo    = []byte("perm_repo") // repo \0 permission id -> ""
)

func init() {
	declareKind(KindPermission, kindDecl{Name: "permissions", Bucket: "permissions", Repo: permissionRepo, Index: indexPermission,
		Derived: [][]byte{bPermSubject, bPermRepo}})
	declareCommand(CmdPermissionCreate, func() Command { return new(PermissionCreate) })
	declareCommand(CmdPermissionDelete, func() Command { return new(PermissionDelete) })
}

// Repository actions, ordered by power; see Implies.
const (
	ActionRead   = "read"
	ActionWrite  = "write"
	ActionDelete = "delete"
	ActionAdmin  = "admin"
)

// Actions lists the repository actions in a stable order.
var Actions = []string{ActionRead, ActionWrite, ActionDelete, ActionAdmin}

// ValidAction reports whether a is a repository action.
func ValidAction(a string) bool {
	for _, x := range Actions {
		if x == a {
			return true
		}
	}
	return false
}

// Implies reports whether holding granted lets one do want: admin implies
// everything, write and delete imply read.
func Implies(granted, want string) bool {
	switch {
	case granted == want, granted == ActionAdmin:
		return true
	case want == ActionRead:
		return granted == ActionWrite || granted == ActionDelete
	}
	return false
}

// Permission grants actions on one repository to a user or a group.
type Permission struct {
	ID           string    `json:"id"`
	RepositoryID string    `json:"repository_id"`
	UserID       string    `json:"user_id,omitempty"`
	GroupID      string    `json:"group_id,omitempty"`
	Permissions  []string  `json:"permissions"`
	CreatedAt    time.Time `json:"created_at"`
}

// subject is the index key of who a grant is for.
func (p *Permission) subject() string {
	if p.GroupID != "" {
		return groupSubject(p.GroupID)
	}
	return userSubject(p.UserID)
}

func userSubject(id string) string  { return "u:" + id }
func groupSubject(id string) string { return "g:" + id }

// PermissionCreate grants actions on a repository.
type PermissionCreate struct {
	Permission Permission `json:"permission"`
}

// PermissionDelete revokes a grant.
type PermissionDelete struct {
	ID string `json:"id"`
	// Repo is the grant's repository, when the caller knows it (scope).
	Repo string `json:"repo,omitempty"`
}

func (*PermissionCreate) Type() CmdType   { return CmdPermissionCreate }
func (*PermissionDelete) Type() CmdType   { return CmdPermissionDelete }
func (c *PermissionCreate) Scope() string { return c.Permission.RepositoryID }
func (c *PermissionDelete) Scope() string { return c.Repo }

func (c *PermissionCreate) apply(tx *Tx) error {
	p := c.Permission
	if _, err := tx.Repo(p.RepositoryID); err != nil {
		return err
	}
	switch {
	case p.UserID != "" && p.GroupID == "":
		if _, err := tx.User(p.UserID); err != nil {
			return err
		}
	case p.GroupID != "" && p.UserID == "":
		if _, err := tx.Group(p.GroupID); err != nil {
			return err
		}
	default:
		return Invalidf("exactly one of user_id and group_id")
	}
	for _, a := range p.Permissions {
		if !ValidAction(a) {
			return Invalidf("unknown action %q", a)
		}
	}
	if p.ID == "" || tx.exists(KindPermission, p.ID) {
		return Conflictf("permission id %q", p.ID)
	}
	return tx.putRec(KindPermission, p.ID, p)
}

func (c *PermissionDelete) apply(tx *Tx) error {
	p, err := tx.Permission(c.ID)
	if err != nil {
		return err
	}
	if c.Repo != "" && p.RepositoryID != c.Repo {
		return NotFoundf("permission %s", c.ID)
	}
	return tx.delRec(KindPermission, c.ID)
}

func permissionRepo(_ string, body []byte) string {
	var p struct {
		Repo string `json:"repository_id"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Repo
}

func indexPermission(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Permission](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.delKey(bPermSubject, key(o.subject(), o.RepositoryID, id)); err != nil {
			return err
		}
		if err := tx.delKey(bPermRepo, key(o.RepositoryID, id)); err != nil {
			return err
		}
	}
	if n != nil {
		if err := tx.setKey(bPermSubject, key(n.subject(), n.RepositoryID, id)); err != nil {
			return err
		}
		return tx.setKey(bPermRepo, key(n.RepositoryID, id))
	}
	return nil
}

// Permission returns a grant by id.
func (tx *Tx) Permission(id string) (*Permission, error) {
	return getRec[Permission](tx, KindPermission, id, "permission")
}

// Permissions lists grants, filtered by fn when it is not nil, oldest first.
func (tx *Tx) Permissions(fn func(*Permission) bool) ([]Permission, error) {
	var out []Permission
	err := tx.scan(Space(KindPermission), "", func(_ string, raw []byte) error {
		var p Permission
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		if fn == nil || fn(&p) {
			out = append(out, p)
		}
		return nil
	})
	sortGrants(out)
	return out, err
}

// RepoPermissions lists the grants on one repository, oldest first.
func (tx *Tx) RepoPermissions(repoID string) ([]Permission, error) {
	return tx.grants(tx.prefixKeys(bPermRepo, key(repoID, "")))
}

// Grants lists the grants that apply to a user on a repository: its own
// and its groups', oldest first. Index lookups only, however many grants
// the store holds.
func (tx *Tx) Grants(userID, repoID string) ([]Permission, error) {
	ids := tx.prefixKeys(bPermSubject, key(userSubject(userID), repoID, ""))
	groups, err := tx.GroupsOf(userID)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		ids = append(ids, tx.prefixKeys(bPermSubject, key(groupSubject(g), repoID, ""))...)
	}
	return tx.grants(ids)
}

func (tx *Tx) grants(ids []string) ([]Permission, error) {
	out := make([]Permission, 0, len(ids))
	for _, id := range ids {
		p, err := tx.Permission(id)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	sortGrants(out)
	return out, nil
}

func sortGrants(ps []Permission) {
	sort.SliceStable(ps, func(i, j int) bool {
		if !ps[i].CreatedAt.Equal(ps[j].CreatedAt) {
			return ps[i].CreatedAt.Before(ps[j].CreatedAt)
		}
		return ps[i].ID < ps[j].ID
	})
}
