package meta

import (
	"slices"
	"strings"
	"testing"
)

// TestUserProvision: a directory user is created with the groups the
// directory gives (new ones created), later provisions make those
// memberships follow the directory, memberships an administrator gave
// stay, a local user of the same id is not taken over, and the last
// administrator keeps the role.
func TestUserProvision(t *testing.T) {
	s := open(t)
	apply := func(c Command) {
		t.Helper()
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	apply(&UserCreate{User: User{ID: "root", Username: "root", Role: RoleAdmin, CreatedAt: t0}})
	apply(&GroupCreate{Group: Group{ID: "g-local", Name: "local", CreatedAt: t0}})
	apply(&GroupCreate{Group: Group{ID: "g-dev", Name: "developers", CreatedAt: t0}})
	alice := User{ID: "a", Username: "alice", Email: "alice@example.org", Role: RoleUser, Source: SourceLDAP}
	apply(&UserProvision{User: alice, NewGroups: []Group{{ID: "g-ops", Name: "ops"}}, Groups: []string{"g-dev", "g-ops"}, At: t0})
	apply(&GroupAddMembers{GroupID: "g-local", UserIDs: []string{"a"}}) // an administrator's
	groupsOf := func() []string {
		t.Helper()
		var ids []string
		if err := s.View(func(tx *Tx) error { var err error; ids, err = tx.GroupsOf("a"); return err }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	user := func() *User {
		t.Helper()
		var u *User
		if err := s.View(func(tx *Tx) error { var err error; u, err = tx.User("a"); return err }); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if got := groupsOf(); !slices.Equal(got, []string{"g-dev", "g-local", "g-ops"}) {
		t.Fatalf("groups after the first provision: %v", got)
	}
	if u := user(); u.Source != SourceLDAP || u.PasswordHash != "" || !slices.Equal(u.DirectoryGroups, []string{"g-dev", "g-ops"}) {
		t.Fatalf("user after the first provision: %+v", u)
	}
	// The display name is UserDisplayName's alone: a provision that
	// carries another (or none, as an older build's) leaves it.
	apply(&UserDisplayName{ID: "a", DisplayName: "Alice Example", At: t0})
	// The directory no longer lists ops; an admin role comes.
	alice.Email, alice.Role, alice.DisplayName = "alice@corp.example.org", RoleAdmin, "Mallory"
	apply(&UserProvision{User: alice, Groups: []string{"g-dev"}, At: t0})
	if u := user(); u.DisplayName != "Alice Example" {
		t.Fatalf("a provision changed the display name: %+v", u)
	}
	if err := s.Apply(0, &UserDisplayName{ID: "a", DisplayName: strings.Repeat("a", MaxDisplayName+1), At: t0}); err == nil {
		t.Fatal("an unbounded display name was stored")
	}
	if got := groupsOf(); !slices.Equal(got, []string{"g-dev", "g-local"}) {
		t.Fatalf("groups after leaving ops: %v", got)
	}
	if u := user(); u.Email != "alice@corp.example.org" || u.Role != RoleAdmin {
		t.Fatalf("user after the update: %+v", u)
	}
	// A user of another source, or a new user whose name is taken, is refused.
	if err := s.Apply(0, &UserProvision{User: User{ID: "root", Username: "root", Role: RoleUser, Source: SourceLDAP}, At: t0}); err == nil {
		t.Fatal("a local user was taken over by a directory")
	}
	if err := s.Apply(0, &UserProvision{User: User{ID: "x", Username: "ROOT", Role: RoleUser, Source: SourceLDAP}, At: t0}); err == nil {
		t.Fatal("a directory user took a local user's name")
	}
	// Alone as administrator (root deleted), alice stays one.
	apply(&UserDelete{ID: "root"})
	alice.Role = RoleUser
	apply(&UserProvision{User: alice, Groups: nil, At: t0})
	if u := user(); u.Role != RoleAdmin || len(u.DirectoryGroups) != 0 {
		t.Fatalf("the last administrator: %+v", u)
	}
	if got := groupsOf(); !slices.Equal(got, []string{"g-local"}) {
		t.Fatalf("groups after the directory gave none: %v", got)
	}
}
