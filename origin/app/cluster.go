package app

import (
	"context"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/progress"
)

// Cluster is the origin cluster this origin belongs to, as far as the use
// cases need it.
type Cluster interface {
	// View is the cluster as this origin sees it.
	View() ClusterView
	// Origins are the API URLs of the live origins (told to edge nodes
	// with their heartbeat).
	Origins() []string
	// RemoveMember takes a dead origin out of the cluster.
	RemoveMember(ctx context.Context, id string) error
}

// ClusterView is the cluster as GET /admin/cluster shows it.
type ClusterView struct {
	LeaderID string          `json:"leader_id"`
	Members  []ClusterMember `json:"members"`
}

// ClusterMember is one node of the cluster view. Role is leader,
// follower or nonvoter for raft's members, joining for an origin the pool
// knows that is not a voter yet, edge for an edge node in the pool.
type ClusterMember struct {
	ID           string `json:"id"`
	APIURL       string `json:"api_url"`
	RaftAddr     string `json:"raft_addr"`
	Role         string `json:"role"`
	AppliedIndex uint64 `json:"applied_index"`
	Healthy      bool   `json:"healthy"`
	// Gossip is what the gossip pool says of the node: alive, dead, left,
	// or unknown (a raft member the pool has not heard of).
	Gossip string `json:"gossip"`
	// Sync is the origin's blob repair progress, as it last told the pool
	// (null: not told; an edge, or a build from before).
	Sync *progress.Sync `json:"sync"`
}

func (a *App) cluster(p *auth.Principal) error {
	if err := requireAdmin(p); err != nil {
		return err
	}
	if a.Cluster == nil {
		return apierr.New(apierr.NotFound, "this node is not part of a cluster")
	}
	return nil
}

// ClusterView shows the cluster's members and leader (administrators
// only).
func (a *App) ClusterView(_ context.Context, p *auth.Principal) (ClusterView, error) {
	if err := a.cluster(p); err != nil {
		return ClusterView{}, err
	}
	return a.Cluster.View(), nil
}

// RemoveClusterMember takes a dead origin out of the cluster for good
// (administrators only).
func (a *App) RemoveClusterMember(ctx context.Context, p *auth.Principal, id string) error {
	if err := a.cluster(p); err != nil {
		return err
	}
	return a.Cluster.RemoveMember(ctx, id)
}
