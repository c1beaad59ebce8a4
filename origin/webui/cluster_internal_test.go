package webui

import (
	"testing"

	"github.com/depot-registry/depot/origin/app"
)

// TestFaultTolerance: the voters found alive beyond a quorum, as the
// origin counts them (depot_raft_fault_tolerance); members that do not
// vote count for nothing.
func TestFaultTolerance(t *testing.T) {
	m := func(role string, healthy bool) app.ClusterMember {
		return app.ClusterMember{Role: role, Healthy: healthy}
	}
	for _, c := range []struct {
		members          []app.ClusterMember
		voters, up, want int
	}{
		{[]app.ClusterMember{m("leader", true)}, 1, 1, 0},
		{[]app.ClusterMember{m("leader", true), m("follower", true), m("follower", true)}, 3, 3, 1},
		{[]app.ClusterMember{m("leader", true), m("follower", false), m("follower", true)}, 3, 2, 0},
		{[]app.ClusterMember{m("follower", true), m("leader", true), m("follower", true), m("follower", true), m("follower", true)}, 5, 5, 2},
		{[]app.ClusterMember{m("leader", true), m("follower", true), m("follower", true), m("nonvoter", true), m("joining", true), m("edge", true)}, 3, 3, 1},
	} {
		voters, up, got := faultTolerance(c.members)
		if voters != c.voters || up != c.up || got != c.want {
			t.Errorf("%v: %d voters, %d up, tolerance %d; want %d, %d, %d", c.members, voters, up, got, c.voters, c.up, c.want)
		}
	}
}
