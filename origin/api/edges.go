package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// The administration of edge nodes is the application layer's
// (app.ListEdgeNodes...); what nodes themselves send is below.

// edgeReportEvery is how often a node's report is committed: a heartbeat
// in between is answered but changes nothing, so heartbeats cost the log
// little however often nodes send them.
const edgeReportEvery = 10 * time.Second

func (s *Server) listEdges(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	out, err := s.app.ListEdgeNodes(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"edge_nodes": out, "total": len(out)})
}

func (s *Server) getEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.GetEdgeNode(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) createEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		Name   string `json:"name"`
		URL    string `json:"url"`
		Region string `json:"region"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	v, secret, idx, err := s.app.CreateEdgeNode(r.Context(), p, app.NewEdgeNode{Name: req.Name, URL: req.URL, Region: req.Region})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	type created struct {
		*app.EdgeNode
		Token string `json:"token"`
	}
	return written(w, idx, nil, http.StatusCreated, created{EdgeNode: v, Token: secret})
}

func (s *Server) deleteEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteEdgeNode(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}

func (s *Server) assignEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req struct {
		RepositoryIDs []string `json:"repository_ids"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	v, idx, err := s.app.AssignRepositories(r.Context(), p, r.PathValue("id"), req.RepositoryIDs)
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, v)
}

func (s *Server) unassignEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, idx, err := s.app.UnassignRepository(r.Context(), p, r.PathValue("id"), r.PathValue("repo"))
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, v)
}

// edgeHeartbeat takes a node's report of itself and answers what the node
// should serve and how far the log is. Only the node itself may report.
func (s *Server) edgeHeartbeat(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	if p.Edge() != id {
		return apierr.New(apierr.Forbidden, "an edge node reports only for itself")
	}
	var req protocol.Report
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.CachedBytes < 0 || req.MissingBlobs < 0 || req.Downloads < 0 || req.Downloads > 1<<40 || len(req.Version) > 64 {
		return apierr.Invalid("report", "cached_bytes, missing_blobs and downloads must not be negative, version at most 64 characters")
	}
	now := s.d.Now().UTC()
	if s.d.Downloads != nil {
		s.d.Downloads.AddN(s.nodeCounts.allow(id, req.Downloads, now))
	}
	var e *meta.EdgeNode
	if err := s.view(func(tx *meta.Tx) error { var err error; e, err = tx.Edge(id); return err }); err != nil {
		return err
	}
	if last := e.Report; last == nil || now.Sub(last.At) >= edgeReportEvery || last.Version != req.Version {
		rep := meta.EdgeReport{At: now, AppliedIndex: req.AppliedIndex, CachedBytes: req.CachedBytes, MissingBlobs: req.MissingBlobs, Version: req.Version}
		if err := s.apply(r.Context(), w, &meta.EdgeHeartbeat{ID: id, Report: rep}); err != nil {
			return err
		}
	}
	a := protocol.Assignment{RepositoryIDs: e.Repositories, OriginIndex: s.d.Store.LastApplied()}
	if s.d.RecordDownloads != nil {
		a.RecordDownloads, a.RecordDownloadsSince = s.d.RecordDownloads()
	}
	if s.d.Origins != nil {
		a.Origins = s.d.Origins()
	}
	return writeJSON(w, http.StatusOK, a)
}

// edgeEvents takes the download events an edge node served (a batch of
// at most protocol.MaxEvents) into this origin's event queue. An edge reports
// only downloads, of the repositories assigned to it, that happened in
// the last day.
func (s *Server) edgeEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	if p.Edge() != id {
		return apierr.New(apierr.Forbidden, "an edge node reports only for itself")
	}
	var req protocol.Events
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Downloads) > protocol.MaxEvents {
		return apierr.Invalid("downloads", "at most %d downloads in one batch", protocol.MaxEvents)
	}
	now := s.d.Now()
	for i, d := range req.Downloads {
		switch {
		case d.ArtifactID == "" || len(d.ArtifactID) > 64 || len(d.UserID) > 64:
			return apierr.Invalid("downloads", "download %d: artifact_id and user_id are ids", i)
		case d.Remote != "" && !validAddr(d.Remote):
			return apierr.Invalid("downloads", "download %d: remote %q is not an IP address", i, d.Remote)
		case d.At.Before(now.Add(-24*time.Hour)) || d.At.After(now.Add(5*time.Minute)):
			return apierr.Invalid("downloads", "download %d: at %s is not within the last day", i, d.At)
		}
	}
	// The events are built from this origin's store: an artifact of a
	// repository assigned to the node, a user that exists, the names as
	// the store has them. What does not check out (gone meanwhile, or
	// made up) is not taken; nor is what is beyond the node's rate.
	var evs []meta.Event
	err := s.view(func(tx *meta.Tx) error {
		e, err := tx.Edge(id)
		if err != nil {
			return err
		}
		for _, d := range req.Downloads {
			a, err := tx.Artifact(d.ArtifactID)
			if err != nil || !slices.Contains(e.Repositories, a.RepositoryID) {
				continue
			}
			repo, err := tx.Repo(a.RepositoryID)
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
			evs = append(evs, meta.DownloadEvent(a, repo, who, d.At))
		}
		return nil
	})
	if err != nil {
		return err
	}
	accepted := 0
	for _, ev := range evs {
		if !s.nodeEvents.Allow(id).Allowed {
			break
		}
		if s.d.RecordEvent != nil && s.d.RecordEvent(ev) {
			accepted++
		}
	}
	return writeJSON(w, http.StatusOK, protocol.EventsAnswer{Accepted: accepted})
}

// What a real edge could serve bounds what a node reports: its batches
// of download events, and the downloads its heartbeats count.
const (
	NodeEventsPerMinute    = 120 * protocol.MaxEvents // a full batch a second, twice over
	NodeDownloadsPerSecond = 200_000
)

// nodeDownloads bounds the downloads each node counts in its heartbeats
// by the time since its last one.
type nodeDownloads struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allow is how many of count downloads reported now by node are taken.
func (n *nodeDownloads) allow(node string, count int64, now time.Time) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		n.last = map[string]time.Time{}
	}
	since := time.Minute
	if t, ok := n.last[node]; ok {
		since = min(max(now.Sub(t), 0), time.Minute)
	}
	n.last[node] = now
	return min(count, int64(since.Seconds()*NodeDownloadsPerSecond))
}

func validAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// edgeVouch verifies, for an edge node, a JWT presented to it: the node
// holds no secret to check an origin's tokens with and no login sessions
// (see auth.Authenticator.Remote). The verdict says nothing about tokens
// the origin did not sign; the node learns only the claims of a token
// presented to it.
func (s *Server) edgeVouch(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if p.Edge() != r.PathValue("id") {
		return apierr.New(apierr.Forbidden, "an edge node asks only for itself")
	}
	var req protocol.VouchRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	c, err := s.d.Authn.Vouch(req.Token)
	if err != nil {
		return writeJSON(w, http.StatusOK, protocol.Vouch{})
	}
	return writeJSON(w, http.StatusOK, protocol.Vouch{Valid: true, Claims: c})
}

// edgePassword checks a password for an edge node, which holds no
// password hashes: the origin's own check, its failures counted against
// the client's address the node names and against the node (the
// request carries it: auth.ThroughNode). A throttled check answers no.
func (s *Server) edgePassword(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if p.Edge() != r.PathValue("id") {
		return apierr.New(apierr.Forbidden, "an edge node asks only for itself")
	}
	var req protocol.PasswordCheck
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Username == "" || len(req.Username) > auth.MaxUsernameBytes || len(req.Password) > auth.MaxSecretBytes || len(req.Remote) > 64 {
		return writeJSON(w, http.StatusOK, protocol.PasswordVerdict{})
	}
	ctx := auth.ThroughNode(r.Context(), p.Edge())
	_, err := s.d.Authn.Login(ctx, req.Username, req.Password, cmp.Or(req.Remote, httpx.ClientIP(r)))
	if err != nil && !errors.Is(err, auth.ErrBadCredentials) && !errors.As(err, new(*auth.ThrottledError)) {
		return err // busy, or the store failed: the edge says 503
	}
	return writeJSON(w, http.StatusOK, protocol.PasswordVerdict{Valid: err == nil})
}

// edgeFeed serves the change feed to an edge node (replication/feed):
// ?since=<index> (0: everything it may see), ?repository_id= (one of its
// repositories alone), ?principals=<id,id,...> (users and groups just
// brought into its audience), ?global=1 (its audience's users and groups
// alone), ?kinds=<n,...> (the record kinds its replica can apply; none: a
// node from before they were named), ?limit=, ?wait=<seconds> (long poll).
func (s *Server) edgeFeed(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id := r.PathValue("id")
	if p.Edge() != id {
		return apierr.New(apierr.Forbidden, "an edge node reads only its own feed")
	}
	req, err := protocol.ParseFeedQuery(r.URL.Query())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	page, err := feed.Read(ctx, s.d.Store, id, req)
	if errors.Is(err, feed.ErrNotAssigned) {
		return apierr.Invalid("repository_id", "repository %s is not assigned to this edge node", req.Repo)
	}
	if err != nil {
		return err
	}
	if page.Changes == nil {
		page.Changes = []meta.Change{}
	}
	return writeJSON(w, http.StatusOK, page)
}

// edgeBlob serves an edge node a blob by digest, Range requests included
// (a fetch that broke resumes), when a record of one of its repositories
// keeps it; any other digest is not found, whether it exists or not.
func (s *Server) edgeBlob(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id, digest := r.PathValue("id"), r.PathValue("digest")
	if p.Edge() != id {
		return apierr.New(apierr.Forbidden, "an edge node fetches only for itself")
	}
	if _, _, err := blob.ParseDigest(digest); err != nil {
		return apierr.Invalid("digest", "digest must be sha256:<64 hex> or sha512:<128 hex>")
	}
	allowed := false
	err := s.view(func(tx *meta.Tx) error {
		e, err := tx.Edge(id)
		if err != nil {
			return err
		}
		for _, repo := range tx.BlobRepos(digest) {
			if _, ok := slices.BinarySearch(e.Repositories, repo); ok {
				allowed = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	notFound := apierr.New(apierr.NotFound, "blob %s not found in the repositories of this edge node", digest)
	if !allowed {
		return notFound
	}
	f, err := s.d.Blobs.Open(r.Context(), digest)
	if errors.Is(err, blob.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Docker-Content-Digest", digest)
	http.ServeContent(w, r, "", time.Time{}, f)
	return nil
}
