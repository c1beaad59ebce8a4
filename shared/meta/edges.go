package meta

import (
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/progress"
)

// The edge node kind and its commands. Its records hold edge nodes'
// credential hashes: a feed to an edge never carries them.
const (
	KindEdge         Kind    = 9
	SpaceEdgeNames   Space   = 26 // lower(name) -> edge node id
	SpaceEdgeTokens  Space   = 27 // credential hash -> edge node id
	CmdEdgeCreate    CmdType = 21
	CmdEdgeDelete    CmdType = 22
	CmdEdgeAssign    CmdType = 23
	CmdEdgeUnassign  CmdType = 24
	CmdEdgeHeartbeat CmdType = 25
)

var bEdgeRepos = []byte("edge_repos") // repo \0 edge node id -> ""

func init() {
	declareKind(KindEdge, kindDecl{Name: "edge nodes", Bucket: "edges", Index: indexEdge, Derived: [][]byte{bEdgeRepos},
		Lookups: []lookupDecl{{SpaceEdgeNames, "edge node names", "edge_names"}, {SpaceEdgeTokens, "edge node credentials", "edge_tokens"}}})
	declareCommand(CmdEdgeCreate, func() Command { return new(EdgeCreate) })
	declareCommand(CmdEdgeDelete, func() Command { return new(EdgeDelete) })
	declareCommand(CmdEdgeAssign, func() Command { return new(EdgeAssign) })
	declareCommand(CmdEdgeUnassign, func() Command { return new(EdgeUnassign) })
	declareCommand(CmdEdgeHeartbeat, func() Command { return new(EdgeHeartbeat) })
}

// Edge nodes: caches near build farms that replicate the repositories
// assigned to them. The record is global (every origin lists every edge);
// only the hash of the node's credential is kept.

// EdgeNode is a registered edge node.
type EdgeNode struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	Region    string `json:"region,omitempty"`
	TokenHash string `json:"token_hash"`
	// Repositories are the ids of the repositories assigned to the node,
	// sorted.
	Repositories []string  `json:"repository_ids"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Report is the node's last report of itself; nil until the first.
	Report *EdgeReport `json:"report,omitempty"`
}

// EdgeReport is what an edge says of itself in a heartbeat.
type EdgeReport struct {
	At           time.Time `json:"at"`
	AppliedIndex uint64    `json:"applied_index"`
	CachedBytes  int64     `json:"cached_bytes"`
	MissingBlobs int64     `json:"missing_blobs"`
	Version      string    `json:"version"`
	// Sync is the node's prefetch progress (nil from a node, or an
	// origin, before it was kept): shown, never decided on.
	Sync *progress.Sync `json:"sync,omitempty"`
}

// EdgeCreate registers an edge node with no repository assigned.
type EdgeCreate struct {
	Edge EdgeNode `json:"edge"`
}

// EdgeDelete deregisters an edge node: its credential stops working.
type EdgeDelete struct {
	ID string `json:"id"`
}

// EdgeAssign assigns repositories to an edge node (idempotent).
type EdgeAssign struct {
	ID      string    `json:"id"`
	RepoIDs []string  `json:"repository_ids"`
	At      time.Time `json:"at"`
}

// EdgeUnassign takes a repository from an edge node.
type EdgeUnassign struct {
	ID     string    `json:"id"`
	RepoID string    `json:"repository_id"`
	At     time.Time `json:"at"`
}

// EdgeHeartbeat records an edge node's report of itself.
type EdgeHeartbeat struct {
	ID     string     `json:"id"`
	Report EdgeReport `json:"report"`
}

func (*EdgeCreate) Type() CmdType    { return CmdEdgeCreate }
func (*EdgeDelete) Type() CmdType    { return CmdEdgeDelete }
func (*EdgeAssign) Type() CmdType    { return CmdEdgeAssign }
func (*EdgeUnassign) Type() CmdType  { return CmdEdgeUnassign }
func (*EdgeHeartbeat) Type() CmdType { return CmdEdgeHeartbeat }
func (*EdgeCreate) Scope() string    { return "" }
func (*EdgeDelete) Scope() string    { return "" }
func (*EdgeAssign) Scope() string    { return "" }
func (*EdgeUnassign) Scope() string  { return "" }
func (*EdgeHeartbeat) Scope() string { return "" }

func (c *EdgeCreate) apply(tx *Tx) error {
	e := c.Edge
	if e.ID == "" || e.Name == "" || e.URL == "" || e.TokenHash == "" {
		return Invalidf("edge node id, name, url and token hash required")
	}
	if id, _ := tx.lookup(SpaceEdgeNames, lower(e.Name)); id != nil {
		return Conflictf("an edge node named %q exists", e.Name)
	}
	if id, _ := tx.lookup(SpaceEdgeTokens, e.TokenHash); id != nil || tx.exists(KindEdge, e.ID) {
		return Conflictf("edge node exists")
	}
	e.Repositories, e.Report = []string{}, nil
	return tx.putRec(KindEdge, e.ID, e)
}

func (c *EdgeDelete) apply(tx *Tx) error {
	if _, err := tx.Edge(c.ID); err != nil {
		return err
	}
	return tx.delRec(KindEdge, c.ID)
}

func (c *EdgeAssign) apply(tx *Tx) error {
	e, err := tx.Edge(c.ID)
	if err != nil {
		return err
	}
	for _, id := range c.RepoIDs {
		if _, err := tx.Repo(id); err != nil {
			return err
		}
	}
	e.Repositories, e.UpdatedAt = sortedSet(append(e.Repositories, c.RepoIDs...)), c.At
	return tx.putRec(KindEdge, e.ID, e)
}

func (c *EdgeUnassign) apply(tx *Tx) error {
	e, err := tx.Edge(c.ID)
	if err != nil {
		return err
	}
	i := slices.Index(e.Repositories, c.RepoID)
	if i < 0 {
		return NotFoundf("repository %s on edge node %s", c.RepoID, e.Name)
	}
	e.Repositories = slices.Delete(e.Repositories, i, i+1)
	if !c.At.IsZero() {
		e.UpdatedAt = c.At
	}
	return tx.putRec(KindEdge, e.ID, e)
}

func (c *EdgeHeartbeat) apply(tx *Tx) error {
	e, err := tx.Edge(c.ID)
	if err != nil {
		return err
	}
	r := c.Report
	e.Report = &r
	return tx.putRec(KindEdge, e.ID, e)
}

// unassignEverywhere takes a repository that is being deleted from every
// edge node it is assigned to.
func (tx *Tx) unassignEverywhere(repoID string) error {
	for _, id := range tx.prefixKeys(bEdgeRepos, key(repoID, "")) {
		if err := (&EdgeUnassign{ID: id, RepoID: repoID}).apply(tx); err != nil {
			return err
		}
	}
	return nil
}

func indexEdge(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[EdgeNode](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceEdgeNames).Delete([]byte(lower(o.Name))); err != nil {
			return err
		}
		if err := tx.space(SpaceEdgeTokens).Delete([]byte(o.TokenHash)); err != nil {
			return err
		}
		for _, r := range o.Repositories {
			if err := tx.delKey(bEdgeRepos, key(r, id)); err != nil {
				return err
			}
		}
	}
	if n == nil {
		return nil
	}
	if err := tx.setIndexEntry(SpaceEdgeNames, lower(n.Name), []byte(id)); err != nil {
		return err
	}
	if err := tx.setIndexEntry(SpaceEdgeTokens, n.TokenHash, []byte(id)); err != nil {
		return err
	}
	for _, r := range n.Repositories {
		if err := tx.setKey(bEdgeRepos, key(r, id)); err != nil {
			return err
		}
	}
	return nil
}

// Edge returns an edge node by id.
func (tx *Tx) Edge(id string) (*EdgeNode, error) {
	return getRec[EdgeNode](tx, KindEdge, id, "edge node")
}

// EdgeByTokenHash returns the edge node whose credential has that hash.
func (tx *Tx) EdgeByTokenHash(hash string) (*EdgeNode, error) {
	id, _ := tx.lookup(SpaceEdgeTokens, hash)
	if id == nil {
		return nil, NotFoundf("edge node credential")
	}
	return tx.Edge(string(id))
}

// Edges lists the edge nodes ordered by name.
func (tx *Tx) Edges() ([]EdgeNode, error) { return byName(tx, SpaceEdgeNames, tx.Edge) }
