package webui

import (
	"errors"
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
)

// The cluster: its origins as this one sees them, the leader, how many
// more origins it may lose, and the directory's sync when one is set up
// (app.ClusterView, app.DirectoryStatus).

type clusterPage struct {
	Alone     string // why there is no cluster view ("": there is one)
	Members   []app.ClusterMember
	Leader    *app.ClusterMember
	LeaderID  string
	Voters    int // raft's voting members
	Up        int // of them, those gossip finds alive
	Tolerance int // more voters it may lose and keep a quorum
	Directory *app.LDAPStatus
}

// faultTolerance is how many more voters the cluster can lose and keep a
// quorum, counting the voters found alive: the origin's own figure
// (depot_raft_fault_tolerance), from the same view.
func faultTolerance(members []app.ClusterMember) (voters, up, tolerance int) {
	for _, m := range members {
		if m.Role != "leader" && m.Role != "follower" {
			continue
		}
		voters++
		if m.Healthy {
			up++
		}
	}
	return voters, up, max(up-(voters/2+1), 0)
}

func (u *UI) cluster(w http.ResponseWriter, c *call) error {
	var p clusterPage
	v, err := u.d.App.ClusterView(c.r.Context(), c.p)
	var e *apierr.Error
	switch {
	case errors.As(err, &e) && e.Code == apierr.NotFound:
		p.Alone = e.Message
	case err != nil:
		return err
	default:
		p.Members, p.LeaderID = v.Members, v.LeaderID
		for i := range v.Members {
			if v.Members[i].ID == v.LeaderID {
				p.Leader = &v.Members[i]
			}
		}
		p.Voters, p.Up, p.Tolerance = faultTolerance(v.Members)
	}
	dir, err := u.d.App.DirectoryStatus(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	p.Directory = dir.LDAP
	return u.render(w, c, 0, "cluster", "Cluster", p)
}
