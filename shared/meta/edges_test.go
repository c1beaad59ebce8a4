package meta

import (
	"errors"
	"reflect"
	"testing"
)

// TestEdgeRules: names and credentials are unique, only existing
// repositories are assigned, and a refused command changes nothing.
func TestEdgeRules(t *testing.T) {
	s := open(t)
	seed(t, s) // repository r1
	e := EdgeNode{ID: "e1", Name: "Near-CI", URL: "http://e:8081", TokenHash: "h1", CreatedAt: t0, UpdatedAt: t0}
	if err := s.Apply(0, &EdgeCreate{Edge: e}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  Command
		want error
	}{
		{&EdgeCreate{Edge: EdgeNode{ID: "e2", Name: "near-ci", URL: "http://f", TokenHash: "h2"}}, ErrConflict},
		{&EdgeCreate{Edge: EdgeNode{ID: "e2", Name: "other", URL: "http://f", TokenHash: "h1"}}, ErrConflict},
		{&EdgeCreate{Edge: EdgeNode{ID: "e2", Name: "other", TokenHash: "h2"}}, ErrInvalid},
		{&EdgeAssign{ID: "e1", RepoIDs: []string{"r1", "nope"}}, ErrNotFound},
		{&EdgeAssign{ID: "e9", RepoIDs: []string{"r1"}}, ErrNotFound},
		{&EdgeUnassign{ID: "e1", RepoID: "r1"}, ErrNotFound},
		{&EdgeDelete{ID: "e9"}, ErrNotFound},
	} {
		if err := s.Apply(0, tc.cmd); !errors.Is(err, tc.want) {
			t.Errorf("%T %+v: err = %v, want %v", tc.cmd, tc.cmd, err, tc.want)
		}
	}
	err := s.View(func(tx *Tx) error {
		got, err := tx.Edges()
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].Name != "Near-CI" || !reflect.DeepEqual(got[0].Repositories, []string{}) {
			t.Errorf("edges after refused commands = %+v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
