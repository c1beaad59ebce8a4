package app

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/policy"
	"github.com/depot-registry/depot/shared/progress"
	"github.com/depot-registry/depot/shared/ratelimit"
)

// What edge nodes ask of the origins (replication/protocol): each with
// the node's own credential, and only for itself.

// edgeReportEvery is how often a node's report is committed: a heartbeat
// in between is answered but changes nothing, so heartbeats cost the log
// little however often nodes send them.
const edgeReportEvery = 10 * time.Second

// What a real edge could serve bounds what a node reports: its batches
// of download events, and the downloads its heartbeats count.
const (
	NodeEventsPerMinute    = 120 * protocol.MaxEvents // a full batch a second, twice over
	NodeDownloadsPerSecond = 200_000
)

// EventSink takes the events that are not commands of their own (the
// downloads edge nodes served) into the event log.
type EventSink interface {
	// Add queues an event; false: the queue was full.
	Add(meta.Event) bool
	// RecordingDownloads says whether downloads are events now, and from
	// when (edges are told with their heartbeat).
	RecordingDownloads() (bool, time.Time)
}

// nodeBudgets bound what each node reports, per node.
type nodeBudgets struct {
	once      sync.Once
	events    *ratelimit.Limiter
	mu        sync.Mutex
	lastCount map[string]time.Time // a node's last heartbeat that counted downloads
}

func (a *App) budgets() *nodeBudgets {
	a.nodes.once.Do(func() {
		a.nodes.events = ratelimit.New(NodeEventsPerMinute, time.Minute, a.Now)
		a.nodes.lastCount = map[string]time.Time{}
	})
	return &a.nodes
}

// countable is how many of count downloads reported now by node are
// taken: no more than a node could serve since its last heartbeat.
func (n *nodeBudgets) countable(node string, count int64, now time.Time) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	since := time.Minute
	if t, ok := n.lastCount[node]; ok {
		since = min(max(now.Sub(t), 0), time.Minute)
	}
	n.lastCount[node] = now
	return min(count, int64(since.Seconds()*NodeDownloadsPerSecond))
}

// requireNode refuses a caller that is not edge node id.
func requireNode(p *auth.Principal, id, what string) error {
	switch owner := p.Edge(); {
	case owner == id:
		return nil
	case owner != "":
		return apierr.New(apierr.Forbidden, "an edge node %s: this token is edge node %s's, not %s's (check the edge's --node-id)", what, owner, id)
	}
	return apierr.New(apierr.Forbidden, "an edge node %s", what)
}

// Heartbeat takes node id's report of itself and answers what it should
// serve and how far the log is.
func (a *App) Heartbeat(ctx context.Context, p *auth.Principal, id string, rep protocol.Report) (protocol.Assignment, uint64, error) {
	if err := requireNode(p, id, "reports only for itself"); err != nil {
		return protocol.Assignment{}, 0, err
	}
	if rep.CachedBytes < 0 || rep.MissingBlobs < 0 || rep.Downloads < 0 || rep.Downloads > 1<<40 || len(rep.Version) > 64 ||
		len(rep.Seen) > protocol.MaxSeen {
		return protocol.Assignment{}, 0, apierr.Invalid("report", "cached_bytes, missing_blobs and downloads must not be negative, version at most 64 characters, seen at most %d artifacts", protocol.MaxSeen)
	}
	if err := checkSync(rep.Sync); err != nil {
		return protocol.Assignment{}, 0, err
	}
	now := a.now()
	if a.Downloads != nil {
		a.Downloads.AddN(a.budgets().countable(id, rep.Downloads, now))
	}
	var e *meta.EdgeNode
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if e, err = tx.Edge(id); err != nil {
			return err
		}
		if a.Downloads != nil {
			// Only artifacts of the repositories the node serves.
			for _, aid := range rep.Seen {
				if art, err := tx.Artifact(aid); err == nil && slices.Contains(e.Repositories, art.RepositoryID) {
					a.Downloads.Seen(aid)
				}
			}
		}
		return nil
	})
	if err != nil {
		return protocol.Assignment{}, 0, err
	}
	var idx uint64
	if last := e.Report; last == nil || now.Sub(last.At) >= edgeReportEvery || last.Version != rep.Version {
		r := meta.EdgeReport{At: now, AppliedIndex: rep.AppliedIndex, CachedBytes: rep.CachedBytes, MissingBlobs: rep.MissingBlobs,
			Version: rep.Version, Sync: rep.Sync}
		var err error
		if idx, err = a.commit(ctx, &meta.EdgeHeartbeat{ID: id, Report: r}); err != nil {
			return protocol.Assignment{}, idx, err
		}
	}
	out := protocol.Assignment{RepositoryIDs: e.Repositories, OriginIndex: a.Store.LastApplied()}
	if a.EventLog != nil {
		out.RecordDownloads, out.RecordDownloadsSince = a.EventLog.RecordingDownloads()
	}
	if a.Cluster != nil {
		out.Origins = a.Cluster.Origins()
	}
	return out, idx, nil
}

// checkSync bounds a node's report of its sync (it is kept in the log).
func checkSync(s *progress.Sync) error {
	if s == nil {
		return nil
	}
	if !slices.Contains([]string{progress.Synced, progress.Syncing, progress.Behind}, s.State) || len(s.Operation) > 32 ||
		min(s.Missing, s.Done, s.Total, s.Failed, s.Bytes, s.BytesPerSecond) < 0 || (s.ETASeconds != nil && *s.ETASeconds < 0) {
		return apierr.Invalid("sync", "sync must have a known state, an operation of at most 32 characters and no negative figures")
	}
	return nil
}

// NodeEvents takes the download events node id served (a batch of at
// most protocol.MaxEvents) into the event log: only downloads of the
// repositories assigned to it, that happened in the last day, and no
// more than its budget.
func (a *App) NodeEvents(_ context.Context, p *auth.Principal, id string, in protocol.Events) (protocol.EventsAnswer, error) {
	if err := requireNode(p, id, "reports only for itself"); err != nil {
		return protocol.EventsAnswer{}, err
	}
	if len(in.Downloads) > protocol.MaxEvents || len(in.Violations) > protocol.MaxEvents {
		return protocol.EventsAnswer{}, apierr.Invalid("downloads", "at most %d downloads and %d violations in one batch", protocol.MaxEvents, protocol.MaxEvents)
	}
	now := a.Now()
	for i, v := range in.Violations {
		switch {
		case v.ArtifactID == "" || len(v.ArtifactID) > 64 || len(v.UserID) > 64 || len(v.PolicyID) > 64:
			return protocol.EventsAnswer{}, apierr.Invalid("violations", "violation %d: artifact_id, policy_id and user_id are ids", i)
		case v.Remote != "" && !validAddr(v.Remote):
			return protocol.EventsAnswer{}, apierr.Invalid("violations", "violation %d: remote %q is not an IP address", i, v.Remote)
		case v.At.Before(now.Add(-24*time.Hour)) || v.At.After(now.Add(5*time.Minute)):
			return protocol.EventsAnswer{}, apierr.Invalid("violations", "violation %d: at %s is not within the last day", i, v.At)
		}
	}
	for i, d := range in.Downloads {
		switch {
		case d.ArtifactID == "" || len(d.ArtifactID) > 64 || len(d.UserID) > 64:
			return protocol.EventsAnswer{}, apierr.Invalid("downloads", "download %d: artifact_id and user_id are ids", i)
		case d.Remote != "" && !validAddr(d.Remote):
			return protocol.EventsAnswer{}, apierr.Invalid("downloads", "download %d: remote %q is not an IP address", i, d.Remote)
		case d.At.Before(now.Add(-24*time.Hour)) || d.At.After(now.Add(5*time.Minute)):
			return protocol.EventsAnswer{}, apierr.Invalid("downloads", "download %d: at %s is not within the last day", i, d.At)
		}
	}
	// The events are built from the store: an artifact of a repository
	// assigned to the node, a user that exists, the names as the store has
	// them. What does not check out (gone meanwhile, or made up) is not
	// taken; nor is what is beyond the node's budget.
	var evs []meta.Event
	err := a.view(func(tx *meta.Tx) error {
		e, err := tx.Edge(id)
		if err != nil {
			return err
		}
		for _, d := range in.Downloads {
			art, err := tx.Artifact(d.ArtifactID)
			if err != nil || !slices.Contains(e.Repositories, art.RepositoryID) {
				continue
			}
			repo, err := tx.Repo(art.RepositoryID)
			if err != nil {
				continue
			}
			who := meta.Actor{Username: "anonymous", IPAddress: d.Remote}
			if d.UserID != "" {
				u, err := tx.User(d.UserID)
				if err != nil {
					continue
				}
				who.UserID, who.Username = u.ID, u.Username
			}
			evs = append(evs, meta.DownloadEvent(art, repo, who, d.At))
		}
		if len(in.Violations) == 0 {
			return nil
		}
		// A refusal the node reports is recorded as the origin decides it
		// from its own store: a policy that blocks the artifact there.
		policies, err := tx.Policies()
		if err != nil {
			return err
		}
		for _, v := range in.Violations {
			art, err := tx.Artifact(v.ArtifactID)
			if err != nil || !slices.Contains(e.Repositories, art.RepositoryID) {
				continue
			}
			repo, err := tx.Repo(art.RepositoryID)
			if err != nil {
				continue
			}
			d := policy.Download(policies, repo, tx.Verdict(art.ID), policy.Signed(tx, nil, repo, art), v.At)
			if !d.Blocked {
				continue
			}
			who := meta.Actor{Username: "anonymous", IPAddress: v.Remote}
			if v.UserID != "" {
				u, err := tx.User(v.UserID)
				if err != nil {
					continue
				}
				who.UserID, who.Username = u.ID, u.Username
			}
			evs = append(evs, meta.ViolationEvent("download", art, repo, d.PolicyID, d.Policy, d.Reason, d.Advisories, who, v.At))
		}
		return nil
	})
	if err != nil {
		return protocol.EventsAnswer{}, err
	}
	accepted := 0
	for _, ev := range evs {
		if !a.budgets().events.Allow(id).Allowed {
			break
		}
		if a.EventLog != nil && a.EventLog.Add(ev) {
			accepted++
		}
	}
	return protocol.EventsAnswer{Accepted: accepted}, nil
}

func validAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// Vouch verifies, for node id, a JWT presented to it: the node holds no
// secret to check an origin's tokens with and no login sessions (see
// auth.Authenticator.Remote). The verdict says nothing about tokens the
// origins did not sign; the node learns only the claims of a token
// presented to it.
func (a *App) Vouch(_ context.Context, p *auth.Principal, id string, in protocol.VouchRequest) (protocol.Vouch, error) {
	if err := requireNode(p, id, "asks only for itself"); err != nil {
		return protocol.Vouch{}, err
	}
	c, err := a.Authn.Vouch(in.Token)
	if err != nil {
		return protocol.Vouch{}, nil
	}
	return protocol.Vouch{Valid: true, Claims: c}, nil
}

// CheckPassword checks a password for node id, which holds no password
// hashes: the origin's own check, its failures counted against the
// client's address (in.Remote, else remote: where the request came from)
// and against the node. A throttled check answers no.
func (a *App) CheckPassword(ctx context.Context, p *auth.Principal, id string, in protocol.PasswordCheck, remote string) (protocol.PasswordVerdict, error) {
	if err := requireNode(p, id, "asks only for itself"); err != nil {
		return protocol.PasswordVerdict{}, err
	}
	if in.Username == "" || len(in.Username) > auth.MaxUsernameBytes || len(in.Password) > auth.MaxSecretBytes || len(in.Remote) > 64 {
		return protocol.PasswordVerdict{}, nil
	}
	if in.Remote != "" {
		remote = in.Remote
	}
	_, err := a.Authn.Login(auth.ThroughNode(ctx, id), in.Username, in.Password, remote)
	if err != nil && !errors.Is(err, auth.ErrBadCredentials) && !errors.As(err, new(*auth.ThrottledError)) {
		return protocol.PasswordVerdict{}, err // busy, or the store failed: the edge says 503
	}
	return protocol.PasswordVerdict{Valid: err == nil}, nil
}

// Feed reads a page of node id's change feed (replication/feed), waiting
// for changes as long as the query asks and ctx allows.
func (a *App) Feed(ctx context.Context, p *auth.Principal, id string, q protocol.FeedQuery) (protocol.Page, error) {
	if err := requireNode(p, id, "reads only its own feed"); err != nil {
		return protocol.Page{}, err
	}
	page, err := feed.Read(ctx, a.Store, id, q)
	switch {
	case errors.Is(err, feed.ErrNotAssigned):
		return page, apierr.Invalid("repository_id", "repository %s is not assigned to this edge node", q.Repo)
	case err != nil:
		return page, err
	case page.Changes == nil:
		page.Changes = []meta.Change{} // a page of none, not of null
	}
	return page, nil
}

// NodeBlob opens a blob for node id when a record of one of its
// repositories keeps it, or when it is an installed plugin's module; any
// other digest is not found, whether it
// exists or not.
func (a *App) NodeBlob(ctx context.Context, p *auth.Principal, id, digest string) (blob.File, error) {
	if err := requireNode(p, id, "fetches only for itself"); err != nil {
		return nil, err
	}
	if _, _, err := blob.ParseDigest(digest); err != nil {
		return nil, apierr.Invalid("digest", "digest must be sha256:<64 hex> or sha512:<128 hex>")
	}
	allowed := false
	err := a.view(func(tx *meta.Tx) error {
		e, err := tx.Edge(id)
		if err != nil {
			return err
		}
		allowed = slices.ContainsFunc(tx.BlobRepos(digest), func(repo string) bool {
			_, ok := slices.BinarySearch(e.Repositories, repo)
			return ok
		})
		if !allowed { // an installed plugin's module: every node serves the plugins
			plugins, err := tx.InstalledPlugins()
			allowed = slices.ContainsFunc(plugins, func(p meta.InstalledPlugin) bool { return p.Digest == digest })
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	notFound := apierr.New(apierr.NotFound, "blob %s not found in the repositories of this edge node", digest)
	if !allowed {
		return nil, notFound
	}
	f, err := a.Blobs.Open(ctx, digest)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, notFound
	}
	return f, err
}
