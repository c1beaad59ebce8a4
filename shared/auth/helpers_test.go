package auth

import (
	"path/filepath"
	"testing"

	"github.com/depot-registry/depot/shared/meta"
)

// testStore is an empty store, closed with the test, and a function that
// applies a command to it or fails the test.
func testStore(t *testing.T) (*meta.Store, func(meta.Command)) {
	t.Helper()
	store, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, func(c meta.Command) {
		t.Helper()
		if err := store.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
}
