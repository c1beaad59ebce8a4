package meta

import (
	"errors"
	"testing"
)

// TestLastAdminIsKept: the rule "at least one administrator" holds in
// apply, whatever the handlers decided: of two deletes committed one after
// the other on a state with two admins, the second is refused, and so is
// demoting the admin that remains.
func TestLastAdminIsKept(t *testing.T) {
	s := open(t)
	for _, c := range []Command{
		&UserCreate{User: User{ID: "a", Username: "ann", Role: RoleAdmin, CreatedAt: t0}},
		&UserCreate{User: User{ID: "b", Username: "ben", Role: RoleAdmin, CreatedAt: t0}},
		&UserCreate{User: User{ID: "c", Username: "cy", Role: RoleUser, CreatedAt: t0}},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	// Both deletes were decided on the same state (two admins); the log
	// orders them.
	if err := s.Apply(0, &UserDelete{ID: "a"}); err != nil {
		t.Fatalf("delete of one of two admins: %v", err)
	}
	refused := func(what string, c Command) {
		t.Helper()
		before := dump(t, s)
		err := s.Apply(0, c)
		if !errors.Is(err, ErrConflict) || !errors.Is(err, ErrLastAdmin) || err.Error() != "conflict: cannot remove the last administrator" {
			t.Fatalf("%s: err = %v, want the last-admin conflict", what, err)
		}
		if dump(t, s) != before {
			t.Fatalf("%s was refused but changed the store", what)
		}
	}
	refused("delete of the last admin", &UserDelete{ID: "b"})
	for _, r := range []Role{RoleUser, RoleViewer} {
		refused("demotion of the last admin to "+string(r), &UserUpdate{ID: "b", Role: ptr(r), At: t0})
	}
	// In a batch, a refused command changes nothing and the others apply.
	res := s.ApplyBatch([]Entry{
		{Data: must(Encode(&UserDelete{ID: "b"}))},
		{Data: must(Encode(&UserUpdate{ID: "b", Email: ptr("ben@x"), Role: ptr(RoleAdmin), At: t0}))},
	})
	if !errors.Is(res[0].Err, ErrLastAdmin) || res[1].Err != nil {
		t.Fatalf("batch: %+v", res)
	}
	err := s.View(func(tx *Tx) error {
		u, err := tx.User("b")
		if err != nil || u.Role != RoleAdmin || u.Email != "ben@x" {
			t.Errorf("the last admin = %+v, %v", u, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Users who are not admins come and go freely; with a second admin,
	// the first may be demoted.
	for _, c := range []Command{
		&UserUpdate{ID: "c", Role: ptr(RoleViewer), At: t0},
		&UserUpdate{ID: "c", Role: ptr(RoleAdmin), At: t0},
		&UserUpdate{ID: "b", Role: ptr(RoleUser), At: t0},
		&UserDelete{ID: "b"},
	} {
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T %+v: %v", c, c, err)
		}
	}
	refused("delete of the promoted admin, now the last", &UserDelete{ID: "c"})
}
