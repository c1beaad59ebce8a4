package origin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/cluster/leader"
	"github.com/depot-registry/depot/cluster/membership"
	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// The origin's place in a cluster: the gossip pool it belongs to, how it
// forms or joins the raft cluster, and the leader's reconciliation of the
// two.

// peersFile keeps the gossip addresses of the pool's members, so a node
// that restarts finds the pool again without --join.
const peersFile = "gossip-peers.json"

// startMembership starts gossiping and joins the pool: the --join
// addresses, and the members known before a restart.
func (o *Origin) startMembership(ctx context.Context) error {
	pool, err := membership.Start(membership.Config{NodeID: o.nodeID, BindAddr: o.cfg.GossipAddr, Key: o.key, Logger: o.log,
		Meta: membership.Meta{Role: membership.RoleOrigin, RaftAddr: o.node.Addr(), APIURL: o.cfg.ExternalURL, Expect: int(o.cfg.BootstrapExpect),
			Commands: meta.KnownCommands(), BlobCopies: int(o.cfg.BlobCopies)},
		OnChange: o.membershipChanged, Fast: o.cfg.FastGossip})
	if err != nil {
		return err
	}
	o.pool = pool
	join := splitList(o.cfg.Join)
	if len(join) > 0 {
		// A node told to join waits for the pool (its seeds may be
		// starting too), and fails clearly if it never answers.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err = pool.Join(join)
			if err == nil || errors.Is(err, membership.ErrOtherKey) || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if errors.Is(err, membership.ErrOtherKey) {
			return fmt.Errorf("this origin's DEPOT_CLUSTER_KEY (--cluster-key) differs from the cluster's: the origin at %v cannot read "+
				"its gossip, nor it theirs. Give it the key the cluster's origins have", join)
		}
		if err != nil {
			return fmt.Errorf("--join: no origin answered at %v: %w", join, err)
		}
		return nil
	}
	if known := o.knownPeers(); len(known) > 0 {
		if err := pool.Join(known); err != nil {
			o.log.Warn("none of the cluster's known members answered gossip; raft will find its peers", "peers", known, "err", err)
		}
	}
	return nil
}

// membershipChanged wakes the cluster loop.
func (o *Origin) membershipChanged() {
	select {
	case o.poolChanged <- struct{}{}:
	default:
	}
}

// expectBootstrap waits until BootstrapExpect origins started with the
// same expectation see each other, then forms the cluster of them (each
// of them does the same, with the same list).
func (o *Origin) expectBootstrap(ctx context.Context) error {
	want := int(o.cfg.BootstrapExpect)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	logged := false
	for {
		if id, _ := o.node.Leader(); id != "" {
			return nil // formed already (a restart, or another node was faster)
		}
		var servers []raftnode.Server
		for _, m := range o.pool.Members() {
			if m.Role == membership.RoleOrigin && m.Status == membership.Alive && m.Expect == want {
				servers = append(servers, raftnode.Server{ID: m.ID, Addr: m.RaftAddr, Voter: true})
			}
		}
		if len(servers) >= want {
			o.log.Info("forming the cluster", "voters", len(servers))
			return o.node.BootstrapWith(servers)
		}
		if !logged {
			o.log.Info("waiting for the origins of --bootstrap-expect to see each other", "expect", want, "seen", len(servers))
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("--bootstrap-expect %d: saw %d origins: %w", want, len(servers), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusterLoop runs until ctx ends: on the leader it makes raft's voters
// follow the pool; everywhere it gossips the applied index and keeps the
// members' addresses for the next start.
func (o *Origin) clusterLoop(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var saved []string
	differs := map[string]int{} // origins told of a --blob-copies other than this one's
	for {
		members := o.pool.Members()
		o.samePlacement(members, differs)
		if err := leader.Reconcile(o.node, members, o.log); err != nil && !errors.Is(err, raftnode.ErrNotLeader) {
			o.log.Warn("reconciling raft voters with the gossip pool", "err", err)
		}
		applied := o.store.LastApplied()
		downloads := o.downloads.Last24h()
		sync := membership.SyncOf(o.sync())
		o.pool.Update(func(m *membership.Meta) { m.Applied, m.Downloads, m.Sync = applied, downloads, sync })
		if addrs := gossipPeers(members, o.nodeID); !slices.Equal(addrs, saved) && len(addrs) > 0 {
			if err := o.savePeers(addrs); err != nil {
				o.log.Warn("keeping the cluster's gossip addresses", "err", err)
			}
			saved = addrs
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.poolChanged:
		}
	}
}

// samePlacement warns, once per origin and value, of an origin that keeps
// a different number of copies of each blob: blobs then have fewer
// copies than one of them expects (never none: the origin that ranks
// first for a blob is among its holders under any count, and a copy is
// dropped only once its holders have it).
func (o *Origin) samePlacement(members []membership.Member, told map[string]int) {
	for _, m := range members {
		if m.Role != membership.RoleOrigin || m.Status != membership.Alive || m.ID == o.nodeID || int64(m.BlobCopies) == o.cfg.BlobCopies {
			continue
		}
		if v, ok := told[m.ID]; ok && v == m.BlobCopies {
			continue
		}
		told[m.ID] = m.BlobCopies
		o.log.Warn("another origin keeps a different number of copies of each blob; give every origin the same --blob-copies (DEPOT_BLOB_COPIES)",
			"node_id", m.ID, "its_blob_copies", m.BlobCopies, "blob_copies", o.cfg.BlobCopies)
	}
}

// gossipPeers are the gossip addresses of the other origins, to find the
// pool again after a restart.
func gossipPeers(members []membership.Member, self string) []string {
	var out []string
	for _, m := range members {
		if m.ID != self && m.Role == membership.RoleOrigin && m.Status != membership.Left {
			out = append(out, m.Addr)
		}
	}
	slices.Sort(out)
	return out
}

func (o *Origin) knownPeers() []string { return keptPeers(o.cfg.DataDir) }

// keptPeers are the gossip addresses of the other origins kept in
// dataDir.
func keptPeers(dataDir string) []string {
	raw, err := os.ReadFile(filepath.Join(dataDir, peersFile))
	if err != nil {
		return nil
	}
	var addrs []string
	_ = json.Unmarshal(raw, &addrs)
	return addrs
}

func (o *Origin) savePeers(addrs []string) error {
	raw, _ := json.Marshal(addrs)
	path := filepath.Join(o.cfg.DataDir, peersFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// leaveCluster, on a clean stop, hands leadership on and tells the pool
// this node leaves (the leader then removes it from the voters).
func (o *Origin) leaveCluster() {
	if o.node != nil {
		if err := o.node.TransferLeadership(); err != nil {
			o.log.Warn("handing leadership on", "err", err)
		}
	}
	if o.pool != nil {
		if err := o.pool.Leave(2 * time.Second); err != nil {
			o.log.Warn("leaving the gossip pool", "err", err)
		}
		o.pool = nil
	}
}

// originCluster is the cluster as the application layer sees it
// (app.Cluster).
type originCluster struct{ o *Origin }

// View is the cluster as this node sees it: raft's configuration and
// leader, with what the gossip pool says of each node.
func (c originCluster) View() app.ClusterView {
	o := c.o
	leaderID, _ := o.node.Leader()
	v := app.ClusterView{LeaderID: leaderID, Members: []app.ClusterMember{}}
	servers, err := o.node.Servers()
	if err != nil {
		o.log.Warn("reading the raft configuration", "err", err)
	}
	gossip := map[string]membership.Member{}
	for _, m := range o.pool.Members() {
		gossip[m.ID] = m
	}
	seen := map[string]bool{}
	for _, s := range servers {
		m, known := gossip[s.ID]
		c := app.ClusterMember{ID: s.ID, RaftAddr: s.Addr, Role: "follower", Gossip: "unknown"}
		switch {
		case s.ID == leaderID:
			c.Role = "leader"
		case !s.Voter:
			c.Role = "nonvoter"
		}
		if known {
			c.APIURL, c.AppliedIndex, c.Gossip, c.Healthy = m.APIURL, m.Applied, m.Status, m.Status == membership.Alive
			c.Sync = m.Sync.Progress(blobs.RepairOperation)
		}
		if s.ID == o.nodeID {
			c.AppliedIndex, c.Healthy, c.Sync = o.store.LastApplied(), true, o.sync()
		}
		v.Members = append(v.Members, c)
		seen[s.ID] = true
	}
	for _, m := range gossip {
		if seen[m.ID] || m.Status == membership.Left {
			continue
		}
		role := "joining"
		if m.Role == membership.RoleEdge {
			role = "edge"
		}
		v.Members = append(v.Members, app.ClusterMember{ID: m.ID, APIURL: m.APIURL, RaftAddr: m.RaftAddr, Role: role,
			AppliedIndex: m.Applied, Gossip: m.Status, Healthy: m.Status == membership.Alive, Sync: m.Sync.Progress(blobs.RepairOperation)})
	}
	slices.SortFunc(v.Members, func(a, b app.ClusterMember) int { return strings.Compare(a.ID, b.ID) })
	return v
}

// servePeers answers the other origins' RPC on the raft port (mutually
// authenticated with the cluster key): the leader commits the writes
// followers decided; every origin hands out the blobs it holds, takes
// those its peers push and continues the uploads it holds.
func (o *Origin) servePeers() {
	blobSide := o.blobs.Server()
	h := peerrpc.Handler(peerrpc.Services{Leader: leader.Serve(o.node, o.store.LastApplied), Blobs: blobSide, Uploads: blobSide})
	// The goroutine keeps its own server and listener: a failed start
	// closes the origin (and clears these fields) while it runs.
	srv, ln := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)}, o.node.RPCListener()
	o.peerSrv = srv
	go func() { _ = srv.Serve(ln) }()
}

// referencedBlobs pages through the digests some record keeps: what
// blob repair makes sure this origin holds.
func (o *Origin) referencedBlobs(after string, limit int) (page []string, next string, err error) {
	err = o.store.View(func(tx *meta.Tx) error {
		page, next = tx.ReferencedBlobs(after, limit)
		return nil
	})
	return page, next, err
}

// referencedSince lists the digests referenced after a log index: what
// an incremental repair pass checks.
func (o *Origin) referencedSince(after uint64, limit int) (page []string, next uint64, err error) {
	err = o.store.View(func(tx *meta.Tx) error {
		page, next = tx.ReferencedSince(after, limit)
		return nil
	})
	return page, next, err
}

// Origins are the API URLs of the origins gossip finds alive (with an
// external URL each has its own, or the address it listens on).
func (c originCluster) Origins() []string {
	o := c.o
	var out []string
	for _, m := range o.pool.Members() {
		if m.Role == membership.RoleOrigin && m.Status == membership.Alive && m.APIURL != "" {
			out = append(out, m.APIURL)
		}
	}
	return out
}

// electionWait bounds how long a request waits for the cluster to come
// right: an election's worth of time.
func (o *Origin) electionWait() time.Duration { return max(5*o.cfg.RaftTimeout, 2*time.Second) }

// freshness makes every origin answer reads at least as fresh as the
// client asks: a request with X-Depot-Min-Index: <index> (the
// X-Depot-Index of the client's last write, on whichever origin) waits
// until this origin has applied that index (notified, not polled), at
// most an election's worth of time, then 503. Every read answers the
// index it was served at in X-Depot-Index (writes answer their own).
// Writes wait first until this origin has caught up with the leader; an
// edge's questions (a password, a token to vouch for) are POSTs but
// reads, answered by an origin cut off from the leader too, or its edges
// could check no password while it still serves them.
func (o *Origin) freshness(h http.Handler) http.Handler {
	wait := o.electionWait()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if raw := r.Header.Get("X-Depot-Min-Index"); raw != "" {
			min, err := strconv.ParseUint(raw, 10, 64)
			if err != nil {
				apierr.Write(w, apierr.Invalid("X-Depot-Min-Index", "X-Depot-Min-Index must be a log index (a whole number), as X-Depot-Index gives it"))
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), wait)
			err = o.store.WaitIndex(ctx, min)
			cancel()
			if err != nil {
				apierr.Write(w, apierr.New(apierr.Unavailable, "this origin has applied the log up to %d, not yet %d; retry", o.store.LastApplied(), min).With(apierr.RetryAfter, 1))
				return
			}
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			applied := o.store.LastApplied()
			w.Header().Set("X-Depot-Index", strconv.FormatUint(applied, 10))
			if r.Header.Get("X-Depot-Min-Index") == "" && !o.node.IsLeader() {
				o.readAgainIfMissing(h, w, r, applied, wait)
				return
			}
		case http.MethodOptions:
		default:
			if protocol.IsQuestion(r.URL.Path) {
				break // an edge's question, answered from this origin's state as a read is
			}
			// A write is decided here from what this origin has applied:
			// first catch up with what the leader has committed, so a
			// write acknowledged on another origin just before (a layer
			// pushed through another origin behind a load balancer) is
			// seen, not refused as missing.
			ctx, cancel := context.WithTimeout(r.Context(), wait)
			err := o.forward.Sync(ctx)
			cancel()
			if err != nil {
				apierr.Write(w, apierr.New(apierr.Unavailable, "this origin cannot reach a leader to catch up with the cluster; retry").With(apierr.RetryAfter, 1))
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// readAgainIfMissing serves a read on a follower; a "not found" is held
// back: it may be of a write another origin acknowledged a moment ago
// that this one has not applied yet (a client behind a load balancer
// pushes at one origin and pulls at another). The follower catches up
// with the leader first and, if that brought anything new, serves the
// read again; otherwise the 404 goes out as it was. When no leader
// answers in time, the answer is 503 with Retry-After.
func (o *Origin) readAgainIfMissing(h http.Handler, w http.ResponseWriter, r *http.Request, applied uint64, wait time.Duration) {
	hw := &hold404{w: w, header: w.Header().Clone()}
	h.ServeHTTP(hw, r)
	if !hw.held {
		return
	}
	// Bounded: a follower cut off from the leader answers its 404s a
	// second late, not an election late.
	ctx, cancel := context.WithTimeout(r.Context(), min(wait, time.Second))
	err := o.forward.Sync(ctx)
	cancel()
	if err != nil {
		// Not caught up: a "not found" this origin cannot vouch for.
		apierr.Write(w, apierr.New(apierr.Unavailable, "this origin has applied the log up to %d and cannot reach the leader to catch up "+
			"before answering that this is not found; retry", o.store.LastApplied()).With(apierr.RetryAfter, 1))
		return
	}
	if o.store.LastApplied() > applied {
		w.Header().Set("X-Depot-Index", strconv.FormatUint(o.store.LastApplied(), 10))
		h.ServeHTTP(w, r)
		return
	}
	maps.Copy(w.Header(), hw.header)
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(hw.body.Bytes())
}

// hold404 passes a response through unless its status is 404, which it
// keeps (headers and a small body) for readAgainIfMissing to decide.
type hold404 struct {
	w      http.ResponseWriter
	header http.Header
	held   bool // a 404, kept
	passed bool // anything else, passed through
	body   bytes.Buffer
}

func (h *hold404) Header() http.Header { return h.header }

func (h *hold404) WriteHeader(code int) {
	if h.held || h.passed {
		return
	}
	if code == http.StatusNotFound {
		h.held = true
		return
	}
	h.passed = true
	dst := h.w.Header()
	clear(dst)
	maps.Copy(dst, h.header)
	h.w.WriteHeader(code)
}

func (h *hold404) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	if h.held {
		if h.body.Len()+len(p) <= 64<<10 { // a "not found" says little
			h.body.Write(p)
		}
		return len(p), nil
	}
	return h.w.Write(p)
}

// Flush flushes what passed through (a held 404 is not sent yet).
func (h *hold404) Flush() {
	if h.held {
		return
	}
	h.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(h.w).Flush()
}

// Unwrap lets http.ResponseController reach the real writer (deadlines).
func (h *hold404) Unwrap() http.ResponseWriter { return h.w }

// RemoveMember takes a dead origin out of the cluster for good (one that
// will not come back: its disk is gone), so the voters are the live ones
// again. A live origin is not removed: stopping it makes it leave.
func (c originCluster) RemoveMember(ctx context.Context, id string) error {
	o := c.o
	servers, err := o.node.Servers()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(servers, func(s raftnode.Server) bool { return s.ID == id }) {
		return apierr.New(apierr.NotFound, "%s is not a member of the cluster", id)
	}
	// Liveness first: an origin asked to remove itself is alive, and the
	// answer is to stop it, not to ask another.
	if id == o.nodeID || slices.ContainsFunc(o.pool.Members(), func(m membership.Member) bool { return m.ID == id && m.Status == membership.Alive }) {
		return apierr.New(apierr.Conflict, "%s is alive: stop it and it leaves the cluster by itself; remove-peer is for an origin that is gone", id)
	}
	if err := o.forward.RemovePeer(ctx, id); err != nil {
		return err
	}
	o.pool.Forget(id)
	o.log.Info("removed a peer from the cluster", "node_id", id)
	return nil
}

// reportDownloads adds the downloads this origin counted (its own and
// its edges') to the cluster's hourly history every cfg.DownloadsReport,
// and once more when it stops; what a report could not commit waits for
// the next (an origin that cannot commit for two days loses the oldest).
func (o *Origin) reportDownloads(ctx context.Context) {
	interval := o.cfg.DownloadsReport
	if interval <= 0 {
		interval = time.Minute
	}
	report := func(ctx context.Context) {
		o.reportSeen(ctx)
		counts := o.downloads.Take()
		if len(counts) == 0 {
			return
		}
		if _, err := o.commit.Apply(ctx, &meta.DownloadsCounted{Hours: counts}); err != nil {
			o.downloads.Return(counts)
			if !errors.Is(err, meta.ErrUpgrading) && ctx.Err() == nil {
				o.log.Warn("adding the downloads counted here to the cluster's history; trying again later", "err", err)
			}
		}
	}
	every(ctx, interval, func() { report(ctx) })
	final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	report(final)
}

// maxSeen bounds the artifacts an origin holds as downloaded before it
// records them (each minute): beyond it, downloads of further artifacts
// that minute are not recorded as their last.
const maxSeen = 100_000

// reportSeen records today as the last download day of the artifacts
// downloaded here or at this origin's edges since the last report, those
// whose record does not already say today: a busy artifact costs one
// write a day, not one per download. What cannot be committed waits for
// the next report.
func (o *Origin) reportSeen(ctx context.Context) {
	day := meta.UnixDay(o.now())
	for o.seen.Len() > 0 && ctx.Err() == nil {
		ids := o.seen.Take(meta.MaxSeenPerCommand)
		var fresh []string
		_ = o.store.View(func(tx *meta.Tx) error {
			for _, id := range ids {
				if tx.LastDownloaded(id) < day {
					fresh = append(fresh, id)
				}
			}
			return nil
		})
		if len(fresh) == 0 {
			continue
		}
		if _, err := o.commit.Apply(ctx, &meta.DownloadsSeen{Day: day, ArtifactIDs: fresh}); err != nil {
			o.seen.Return(fresh)
			if !errors.Is(err, meta.ErrUpgrading) && ctx.Err() == nil {
				o.log.Warn("recording the last downloads of artifacts; trying again later", "err", err)
			}
			return
		}
	}
}

// clusterDownloads is downloads_24h for a cluster: each origin counts the
// downloads it serves and those its edges report to it, and gossips its
// count; the statistic adds up every live origin's (a few seconds old
// for the others). Counts are kept in memory: an origin's restart or
// death takes its count with it.
type clusterDownloads struct{ o *Origin }

func (d clusterDownloads) AddN(n int64)           { d.o.downloads.AddN(n) }
func (d clusterDownloads) Seen(artifactID string) { d.o.seen.Add(artifactID) }

func (d clusterDownloads) Last24h() int64 {
	n := d.o.downloads.Last24h()
	for _, m := range d.o.pool.Members() {
		if m.ID != d.o.nodeID && m.Role == membership.RoleOrigin && m.Status == membership.Alive {
			n += m.Downloads
		}
	}
	return n
}
