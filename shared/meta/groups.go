package meta

import (
	"errors"
	"slices"
	"sort"
	"time"
)

// The group kind and its commands.
const (
	KindGroup          Kind    = 4
	SpaceGroupNames    Space   = 21 // lower(name) -> group id
	CmdGroupCreate     CmdType = 8
	CmdGroupAddMembers CmdType = 9
	// CmdGroupRemoveMembers is numbered after the directory's commands.
	CmdGroupRemoveMembers CmdType = 40
)

var bMembers = []byte("members") // user \0 group id -> ""

func init() {
	declareKind(KindGroup, kindDecl{Name: "groups", Bucket: "groups", Index: indexGroup, Derived: [][]byte{bMembers},
		Lookups: []lookupDecl{{SpaceGroupNames, "group names", "group_names"}}})
	declareCommand(CmdGroupCreate, func() Command { return new(GroupCreate) })
	declareCommand(CmdGroupAddMembers, func() Command { return new(GroupAddMembers) })
	declareCommand(CmdGroupRemoveMembers, func() Command { return new(GroupRemoveMembers) })
}

// Group is a named set of users that permissions can be granted to.
type Group struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Members     []string  `json:"members"` // user ids, sorted
	CreatedAt   time.Time `json:"created_at"`
}

// GroupCreate adds a group; its name must be free.
type GroupCreate struct {
	Group Group `json:"group"`
}

// GroupAddMembers adds existing users to a group (idempotent).
type GroupAddMembers struct {
	GroupID string   `json:"group_id"`
	UserIDs []string `json:"user_ids"`
}

// GroupRemoveMembers takes users out of a group (those not in it are
// ignored). A directory that gave the membership gives it again at the
// user's next sign-in or sync.
type GroupRemoveMembers struct {
	GroupID string   `json:"group_id"`
	UserIDs []string `json:"user_ids"`
}

func (*GroupRemoveMembers) Type() CmdType { return CmdGroupRemoveMembers }
func (*GroupRemoveMembers) Scope() string { return "" }

func (c *GroupRemoveMembers) apply(tx *Tx) error {
	g, err := tx.Group(c.GroupID)
	if err != nil {
		return err
	}
	g.Members = slices.DeleteFunc(slices.Clone(g.Members), func(id string) bool { return slices.Contains(c.UserIDs, id) })
	return tx.putRec(KindGroup, g.ID, g)
}

func (*GroupCreate) Type() CmdType     { return CmdGroupCreate }
func (*GroupAddMembers) Type() CmdType { return CmdGroupAddMembers }
func (*GroupCreate) Scope() string     { return "" }
func (*GroupAddMembers) Scope() string { return "" }

func (c *GroupCreate) apply(tx *Tx) error {
	g := c.Group
	if g.ID == "" || g.Name == "" {
		return Invalidf("group id and name required")
	}
	if id, _ := tx.lookup(SpaceGroupNames, lower(g.Name)); id != nil {
		return Conflictf("group %q exists", g.Name)
	}
	if tx.exists(KindGroup, g.ID) {
		return Conflictf("group id %q exists", g.ID)
	}
	for _, id := range g.Members {
		if _, err := tx.User(id); err != nil {
			return err
		}
	}
	g.Members = sortedSet(g.Members)
	return tx.putRec(KindGroup, g.ID, g)
}

func (c *GroupAddMembers) apply(tx *Tx) error {
	g, err := tx.Group(c.GroupID)
	if err != nil {
		return err
	}
	for _, id := range c.UserIDs {
		if _, err := tx.User(id); err != nil {
			return err
		}
	}
	g.Members = sortedSet(append(g.Members, c.UserIDs...))
	return tx.putRec(KindGroup, g.ID, g)
}

// sortedSet sorts ids and drops duplicates; never nil.
func sortedSet(ids []string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	n := 0
	for i, id := range out {
		if i == 0 || id != out[n-1] {
			out[n] = id
			n++
		}
	}
	return out[:n]
}

func indexGroup(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Group](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceGroupNames).Delete([]byte(lower(o.Name))); err != nil {
			return err
		}
		for _, u := range o.Members {
			if err := tx.delKey(bMembers, key(u, id)); err != nil {
				return err
			}
		}
	}
	if n != nil {
		if err := tx.setIndexEntry(SpaceGroupNames, lower(n.Name), []byte(id)); err != nil {
			return err
		}
		for _, u := range n.Members {
			if err := tx.setKey(bMembers, key(u, id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Group returns a group by id.
func (tx *Tx) Group(id string) (*Group, error) { return getRec[Group](tx, KindGroup, id, "group") }

// GroupByRef reads a group by id or, failing that, by name (names are
// unique), as the API takes either.
func (tx *Tx) GroupByRef(ref string) (*Group, error) {
	g, err := tx.Group(ref)
	if errors.Is(err, ErrNotFound) {
		if id, _ := tx.lookup(SpaceGroupNames, lower(ref)); id != nil {
			return tx.Group(string(id))
		}
	}
	return g, err
}

// Groups lists all groups ordered by name.
func (tx *Tx) Groups() ([]Group, error) { return byName(tx, SpaceGroupNames, tx.Group) }

// GroupsOf lists the ids of the groups a user belongs to, in id order.
func (tx *Tx) GroupsOf(userID string) ([]string, error) {
	return tx.prefixKeys(bMembers, key(userID, "")), nil
}
