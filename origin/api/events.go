package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// eventView is an event as the log answers it: the webhook envelope and
// its cursor.
type eventView struct {
	Cursor    string          `json:"cursor"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// maxEventWait bounds a long poll of the event log.
const maxEventWait = 60 * time.Second

// listEvents answers the events after since (a cursor; "latest": from
// now on), filtered by types and repository_id and by what the caller may
// read: a repository's events need read permission on it, the others
// (users, deleted repositories) the admin role. With wait, an answer that
// would be empty waits that many seconds for an event. next_cursor is
// where to ask from next, past the events the caller may not see too;
// missed says the log was trimmed past since.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	q := r.URL.Query()
	since := q.Get("since")
	if since != "" && since != "latest" && !meta.ValidCursor(since) {
		return apierr.Invalid("since", "since must be a cursor from an earlier answer, or latest")
	}
	var types []string
	if v := q.Get("types"); v != "" {
		types = strings.Split(v, ",")
		for _, t := range types {
			if !slices.Contains(meta.EventNames, t) {
				return apierr.Invalid("types", "unknown event %q", t).With("event", t)
			}
		}
	}
	limit, wait := 100, time.Duration(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return apierr.Invalid("limit", "limit must be an integer from 1 to 1000")
		}
		limit = n
	}
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxEventWait {
			return apierr.Invalid("wait", "wait must be a number of seconds from 0 to %d", int(maxEventWait/time.Second))
		}
		wait = time.Duration(n) * time.Second
	}
	repoID := q.Get("repository_id")
	// A cursor from before what the log has trimmed has missed events:
	// the answer says so, and goes on from the oldest kept.
	missed := false
	if since != "" && since != "latest" {
		_ = s.view(func(tx *meta.Tx) error { missed = since < tx.EventsTrimmed(); return nil })
	}
	if since == "latest" {
		since = meta.EventAfterIndex(s.d.Store.LastApplied())
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	for {
		applied := s.d.Store.LastApplied()
		out, next, err := s.readEvents(p, since, types, repoID, limit)
		if err != nil {
			return err
		}
		if next == "" { // an empty log: what comes next comes after this
			next = meta.EventAfterIndex(applied)
		}
		if len(out) > 0 || wait == 0 || s.d.Store.WaitIndex(ctx, applied+1) != nil {
			body := map[string]any{"events": out, "next_cursor": next}
			if missed {
				body["missed"] = true
			}
			return writeJSON(w, http.StatusOK, body)
		}
		since = next
	}
}

// withoutIP drops the downloader's address from a download's data: who
// downloaded is for the repository's readers, from where for admins.
func withoutIP(data json.RawMessage) json.RawMessage {
	var d map[string]any
	if json.Unmarshal(data, &d) != nil {
		return data
	}
	if who, ok := d["downloader"].(map[string]any); ok {
		delete(who, "ip_address")
	}
	out, err := json.Marshal(d)
	if err != nil {
		return data
	}
	return out
}

// readEvents reads up to limit visible events after since; next is the
// cursor of the last event looked at (since when none).
func (s *Server) readEvents(p *auth.Principal, since string, types []string, repoID string, limit int) ([]eventView, string, error) {
	out := []eventView{}
	next := since
	err := s.view(func(tx *meta.Tx) error {
		ids, err := auth.Readable(tx, p)
		if err != nil {
			return err
		}
		readable := map[string]bool{}
		for _, id := range ids {
			readable[id] = true
		}
		visible := func(e *meta.Event) bool {
			switch {
			case types != nil && !slices.Contains(types, e.Name),
				repoID != "" && e.RepositoryID != repoID:
				return false
			case e.RepositoryID == "" || e.Name == meta.EventRepoDeleted:
				return p.IsAdmin()
			}
			return readable[e.RepositoryID] || p.IsAdmin()
		}
		// Pages of the log until enough are visible; the look is bounded
		// so a caller who may see little does not walk the whole log.
		for looked := 0; len(out) < limit && looked < 20*limit+1000; {
			evs, err := tx.Events(next, limit)
			if err != nil || len(evs) == 0 {
				return err
			}
			for i := range evs {
				e := &evs[i]
				looked++
				next = e.Cursor
				if visible(&e.Event) {
					data := e.Data
					if e.Name == meta.EventArtifactDownloaded && !p.IsAdmin() {
						data = withoutIP(data)
					}
					out = append(out, eventView{Cursor: e.Cursor, Event: e.Name, Timestamp: e.Timestamp, Data: data})
					if len(out) == limit {
						return nil
					}
				}
			}
		}
		return nil
	})
	return out, next, err
}
