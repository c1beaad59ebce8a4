package blobs

import "github.com/depot-registry/depot/cluster/raftnode"

// Raft is the membership raft's configuration gives on node: every
// server, voter or not, and which one leads.
func Raft(node *raftnode.Node) Membership {
	return MembersFunc(func() ([]Member, error) {
		servers, err := node.Servers()
		if err != nil {
			return nil, err
		}
		_, leaderAddr := node.Leader()
		out := make([]Member, len(servers))
		for i, s := range servers {
			out[i] = Member{ID: s.ID, Addr: s.Addr, Voter: s.Voter, Leader: leaderAddr != "" && s.Addr == leaderAddr}
		}
		return out, nil
	})
}
