package leader

import (
	"log/slog"
	"time"

	"github.com/depot-registry/depot/cluster/membership"
	"github.com/depot-registry/depot/cluster/raftnode"
)

// Reconcile, on the leader, makes raft's configuration follow the gossip
// pool: an origin that is alive and not a voter (or a voter at another
// address) is made one, unless it runs an older build than the leader
// (Upgraded); an origin that left cleanly is removed. A dead
// one stays a voter (it may come back; `depot cluster remove-peer`
// removes it for good) and is reported. Elsewhere it does nothing.
func Reconcile(node *raftnode.Node, members []membership.Member, log *slog.Logger) error {
	if !node.IsLeader() {
		return nil
	}
	servers, err := node.Servers()
	if err != nil {
		return err
	}
	voter := map[string]string{}
	for _, s := range servers {
		voter[s.ID] = s.Addr
	}
	self, _ := node.Leader()
	for _, m := range members {
		if m.Role != membership.RoleOrigin || m.RaftAddr == "" {
			continue
		}
		addr, known := voter[m.ID]
		switch {
		case m.Status == membership.Alive && !known && !Upgraded(m):
			log.Warn("not adding an origin that runs an older Depot than the leader as a raft voter; upgrade it", "node_id", m.ID)
		case m.Status == membership.Alive && (!known || addr != m.RaftAddr):
			log.Info("adding an origin as a raft voter", "node_id", m.ID, "raft_addr", m.RaftAddr)
			if err := node.AddVoter(m.ID, m.RaftAddr, 10*time.Second); err != nil {
				return err
			}
		case m.Status == membership.Left && known && m.ID != self:
			log.Info("removing an origin that left from the raft voters", "node_id", m.ID)
			if err := node.RemoveServer(m.ID, 10*time.Second); err != nil {
				return err
			}
		case m.Status == membership.Dead && known:
			log.Warn("a raft voter is not answering gossip", "node_id", m.ID, "raft_addr", addr)
		}
	}
	return nil
}
