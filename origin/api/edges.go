package api

import (
	"context"
	"net/http"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/httpx"
)

// The administration of edge nodes is the application layer's
// (app.ListEdgeNodes...); what nodes themselves send is below.

func (s *Server) listEdges(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	out, err := s.app.ListEdgeNodes(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, edgeList{EdgeNodes: out, Total: len(out)})
}

func (s *Server) getEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.GetEdgeNode(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) createEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newEdgeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	v, secret, idx, err := s.app.CreateEdgeNode(r.Context(), p, app.NewEdgeNode{Name: req.Name, URL: req.URL, Region: req.Region})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusCreated, edgeCreated{EdgeNode: v, Token: secret})
}

func (s *Server) deleteEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteEdgeNode(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}

func (s *Server) assignEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	// One repository (the spec's "assign a repository") or several; each
	// by id or name.
	var req assignRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.RepositoryID != "" {
		req.RepositoryIDs = append(req.RepositoryIDs, req.RepositoryID)
	}
	v, idx, err := s.app.AssignRepositories(r.Context(), p, r.PathValue("id"), req.RepositoryIDs)
	return written(w, idx, err, http.StatusOK, v)
}

func (s *Server) unassignEdge(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, idx, err := s.app.UnassignRepository(r.Context(), p, r.PathValue("id"), r.PathValue("repo"))
	return written(w, idx, err, http.StatusOK, v)
}

// What edge nodes send (replication/protocol) is the application
// layer's too (app.Heartbeat...): the handlers decode, call and encode.

func (s *Server) edgeHeartbeat(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req protocol.Report
	if err := decode(r, &req); err != nil {
		return err
	}
	out, idx, err := s.app.Heartbeat(r.Context(), p, r.PathValue("id"), req)
	return written(w, idx, err, http.StatusOK, out)
}

func (s *Server) edgeEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req protocol.Events
	if err := decode(r, &req); err != nil {
		return err
	}
	out, err := s.app.NodeEvents(r.Context(), p, r.PathValue("id"), req)
	return written(w, 0, err, http.StatusOK, out)
}

func (s *Server) edgeVouch(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req protocol.VouchRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	out, err := s.app.Vouch(r.Context(), p, r.PathValue("id"), req)
	return written(w, 0, err, http.StatusOK, out)
}

func (s *Server) edgePassword(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req protocol.PasswordCheck
	if err := decode(r, &req); err != nil {
		return err
	}
	out, err := s.app.CheckPassword(r.Context(), p, r.PathValue("id"), req, httpx.ClientIP(r))
	return written(w, 0, err, http.StatusOK, out)
}

// edgeFeed serves the change feed: ?since=<index> (0: everything it may
// see), ?repository_id= (one of its repositories alone),
// ?principals=<id,id,...> (users and groups just brought into its
// audience), ?global=1 (its audience's users and groups alone),
// ?kinds=<n,...> (the record kinds its replica can apply; none: a node
// from before they were named), ?limit=, ?wait=<seconds> (long poll, cut
// short when the server shuts down).
func (s *Server) edgeFeed(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	q, err := protocol.ParseFeedQuery(r.URL.Query())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	page, err := s.app.Feed(ctx, p, r.PathValue("id"), q)
	return written(w, 0, err, http.StatusOK, page)
}

// edgeBlob serves an edge node a blob of its repositories by digest,
// Range requests included (a fetch that broke resumes).
func (s *Server) edgeBlob(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	digest := r.PathValue("digest")
	f, err := s.app.NodeBlob(r.Context(), p, r.PathValue("id"), digest)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Docker-Content-Digest", digest)
	http.ServeContent(w, r, "", time.Time{}, f)
	return nil
}
