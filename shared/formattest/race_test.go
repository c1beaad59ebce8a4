package formattest_test

import (
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestRaces: two nodes' handlers over one store whose committer applies
// one command at a time after a hop, as a leader's log does.
func TestRaces(t *testing.T) {
	formattest.RunRaces(t, func(t *testing.T) (*formattest.Env, [2]string) {
		e := formattest.New(t)
		e.Hop = 5 * time.Millisecond
		return e, [2]string{e.Node(all.Build).URL, e.Node(all.Build).URL}
	})
}
