package app

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// MaxEventWait bounds a long poll of the event log.
const MaxEventWait = 60 * time.Second

// EventQuery asks the event log for the events after Since (a cursor;
// "latest": from now on; "": from the oldest kept), of the given Types
// (nil: all) and repository, at most Limit (1 to 1000), waiting up to Wait
// for one when there is none yet.
type EventQuery struct {
	Since        string
	Types        []string
	RepositoryID string
	Limit        int
	Wait         time.Duration
}

// EventPage is what the log answers: the events, the cursor to ask from
// next (past the events the caller may not see too), and whether the log
// was trimmed past Since (events were missed).
type EventPage struct {
	Events []Event
	Next   string
	Missed bool
}

// Event is an event as the log answers it: the webhook envelope and its
// cursor.
type Event struct {
	Cursor    string          `json:"cursor"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Events reads the event log as p may see it: a repository's events need
// read permission on it, the others (users, deleted repositories) the
// admin role; a download's address is for admins.
func (a *App) Events(ctx context.Context, p *auth.Principal, q EventQuery) (EventPage, error) {
	since := q.Since
	if since == "0" {
		since = "" // from the oldest kept, as the edges' change feed takes 0
	}
	if since != "" && since != "latest" && !meta.ValidCursor(since) {
		return EventPage{}, apierr.Invalid("since", "since must be a cursor from an earlier answer, 0 (the oldest) or latest")
	}
	if err := checkEventFilter(q.Types, q.Limit); err != nil {
		return EventPage{}, err
	}
	if q.Wait < 0 || q.Wait > MaxEventWait {
		return EventPage{}, apierr.Invalid("wait", "wait must be a number of seconds from 0 to %d", int(MaxEventWait/time.Second))
	}
	// A cursor from before what the log has trimmed has missed events:
	// the answer says so, and goes on from the oldest kept.
	var page EventPage
	if since != "" && since != "latest" {
		_ = a.view(func(tx *meta.Tx) error { page.Missed = since < tx.EventsTrimmed(); return nil })
	}
	if since == "latest" {
		since = meta.EventAfterIndex(a.Store.LastApplied())
	}
	ctx, cancel := context.WithTimeout(ctx, q.Wait)
	defer cancel()
	for {
		applied := a.Store.LastApplied()
		out, next, err := a.readEvents(p, since, q.Types, q.RepositoryID, q.Limit)
		if err != nil {
			return page, err
		}
		if next == "" { // an empty log: what comes next comes after this
			next = meta.EventAfterIndex(applied)
		}
		if len(out) > 0 || q.Wait == 0 || a.Store.WaitIndex(ctx, applied+1) != nil {
			page.Events, page.Next = out, next
			return page, nil
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
func (a *App) readEvents(p *auth.Principal, since string, types []string, repoID string, limit int) ([]Event, string, error) {
	out, next, _, err := a.walkEvents(p, types, repoID, since, limit, (*meta.Tx).Events)
	return out, next, err
}

// walkEvents reads the log in pages with read (from a cursor, a page's
// size) until limit events p may see are found or the log ends (end);
// the look is bounded so a caller who may see little does not walk the
// whole log. last is the cursor of the last event looked at (from when
// none).
func (a *App) walkEvents(p *auth.Principal, types []string, repoID, from string, limit int,
	read func(tx *meta.Tx, from string, n int) ([]meta.LoggedEvent, error)) (out []Event, last string, end bool, err error) {
	out, last = []Event{}, from
	err = a.view(func(tx *meta.Tx) error {
		visible, err := eventFilter(tx, p, types, repoID)
		if err != nil {
			return err
		}
		for looked := 0; len(out) < limit && looked < 20*limit+1000; {
			evs, err := read(tx, last, limit)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				end = true
				return nil
			}
			for i := range evs {
				e := &evs[i]
				looked++
				last = e.Cursor
				if visible(&e.Event) {
					out = append(out, eventAs(p, e))
					if len(out) == limit {
						return nil
					}
				}
			}
		}
		return nil
	})
	return out, last, end, err
}

// checkEventFilter refuses unknown event names and a limit out of 1 to
// 1000.
func checkEventFilter(types []string, limit int) error {
	for _, t := range types {
		if !slices.Contains(meta.EventNames, t) {
			return apierr.Invalid("types", "unknown event %q", t).With("event", t)
		}
	}
	if limit < 1 || limit > 1000 {
		return apierr.Invalid("limit", "limit must be an integer from 1 to 1000")
	}
	return nil
}

// eventFilter says which events of the log p may see among those asked
// for: a repository's events need read permission on it, the others
// (users, deleted repositories) the admin role.
func eventFilter(tx *meta.Tx, p *auth.Principal, types []string, repoID string) (func(*meta.Event) bool, error) {
	ids, err := auth.Readable(tx, p)
	if err != nil {
		return nil, err
	}
	readable := map[string]bool{}
	for _, id := range ids {
		readable[id] = true
	}
	return func(e *meta.Event) bool {
		switch {
		case types != nil && !slices.Contains(types, e.Name),
			repoID != "" && e.RepositoryID != repoID:
			return false
		case e.RepositoryID == "" || e.Name == meta.EventRepoDeleted:
			return p.IsAdmin()
		}
		return readable[e.RepositoryID] || p.IsAdmin()
	}, nil
}

// eventAs is a logged event as p is answered it (a download's address
// is for admins).
func eventAs(p *auth.Principal, e *meta.LoggedEvent) Event {
	data := e.Data
	if e.Name == meta.EventArtifactDownloaded && !p.IsAdmin() {
		data = withoutIP(data)
	}
	return Event{Cursor: e.Cursor, Event: e.Name, Timestamp: e.Timestamp, Data: data}
}

// RecentEvents reads the event log backwards as p may see it: at most
// limit events (1 to 1000) of the given types and repository logged
// before the cursor before ("": the newest), newest first, and the cursor
// to read older ones from ("" when the log has none older).
func (a *App) RecentEvents(_ context.Context, p *auth.Principal, types []string, repoID, before string, limit int) ([]Event, string, error) {
	if before != "" && !meta.ValidCursor(before) {
		return nil, "", apierr.Invalid("before", "before must be a cursor from an earlier answer")
	}
	if err := checkEventFilter(types, limit); err != nil {
		return nil, "", err
	}
	out, older, end, err := a.walkEvents(p, types, repoID, before, limit, (*meta.Tx).EventsNewestFirst)
	if end {
		older = "" // none older
	}
	return out, older, err
}
