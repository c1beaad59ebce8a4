package origin

// How the origin reports on itself: catching up after its start, and the
// health the API answers.

import (
	"context"
	"time"

	"github.com/depot-registry/depot/cluster/membership"
	"github.com/depot-registry/depot/shared/progress"
	"github.com/depot-registry/depot/shared/version"
)

// catchUp asks the leader how far the log is committed and waits until
// this origin has applied that far, once after the start, trying again
// until it can; meanwhile health says catching_up, so a load balancer
// sends no reads to an origin that would answer from an old state.
func (o *Origin) catchUp(ctx context.Context) {
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := o.forward.Sync(wctx)
		cancel()
		if err == nil {
			o.caughtUp.Store(true)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// reasonNoLeader: raft has no leader (this node lost leadership and no
// other node took over), so no write can commit.
const reasonNoLeader = "no_leader"

// warnPeerUnreachable: a voter of the cluster does not answer gossip
// (the cluster serves, with less fault tolerance).
const warnPeerUnreachable = "peer_unreachable"

// faultTolerance is how many more voters the cluster can lose and keep a
// quorum, counting those gossip finds alive (this origin is), and whether
// any voter is not.
func (o *Origin) faultTolerance() (tolerance int, unreachable bool) {
	servers, err := o.node.Servers()
	if err != nil {
		return 0, false
	}
	alive := map[string]bool{o.nodeID: true}
	for _, m := range o.pool.Members() {
		if m.Status == membership.Alive {
			alive[m.ID] = true
		}
	}
	voters, up := 0, 0
	for _, s := range servers {
		if !s.Voter {
			continue
		}
		voters++
		if alive[s.ID] {
			up++
		} else {
			unreachable = true
		}
	}
	return max(up-(voters/2+1), 0), unreachable
}

// reasonCatchingUp: this origin has not yet applied what the leader had
// committed when it asked, after its start.
const reasonCatchingUp = "catching_up"

// health says what makes the node degraded (raft without a leader,
// storage low or failing) and, for signed-in callers, its details.
func (o *Origin) health() (reasons, warnings []string, details map[string]any) {
	addr, id := o.node.Raft.LeaderWithID()
	if addr == "" {
		reasons = append(reasons, reasonNoLeader)
	}
	if !o.caughtUp.Load() {
		reasons = append(reasons, reasonCatchingUp)
	}
	st := o.space.Status()
	reasons = append(reasons, st.Reasons...)
	tolerance, unreachable := o.faultTolerance()
	if unreachable {
		warnings = append(warnings, warnPeerUnreachable)
	}
	return reasons, warnings, map[string]any{
		"fault_tolerance": tolerance,
		"node_id":         o.nodeID, "raft_state": o.node.Raft.State().String(), "leader_id": string(id),
		"leader_addr": string(addr), "last_applied": o.store.LastApplied(), "version": version.Version, "blob_copies": o.cfg.BlobCopies,
		"storage": map[string]any{"free_bytes": st.Free, "total_bytes": st.Total, "min_free_bytes": st.MinFree},
		"sync":    o.sync(),
	}
}

// sync is how far this origin is from holding every blob placed on it:
// the progress of its repair pass, running or last.
func (o *Origin) sync() *progress.Sync {
	return progress.SyncOf(o.blobs.RepairStatus(), o.blobs.RepairFigures().Missing)
}
