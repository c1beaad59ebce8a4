package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
)

// listEvents answers the events after since (a cursor; "latest": from
// now on), filtered by types and repository_id and by what the caller may
// read (app.Events). With wait, an answer that would be empty waits that
// many seconds for an event. next_cursor is where to ask from next;
// missed says the log was trimmed past since.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v := r.URL.Query()
	q := app.EventQuery{Since: v.Get("since"), RepositoryID: v.Get("repository_id"), Limit: 100}
	if t := v.Get("types"); t != "" {
		q.Types = strings.Split(t, ",")
	}
	if raw := v.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return apierr.Invalid("limit", "limit must be an integer from 1 to 1000")
		}
		q.Limit = n
	}
	if raw := v.Get("wait"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > int(app.MaxEventWait/time.Second) {
			return apierr.Invalid("wait", "wait must be a number of seconds from 0 to %d", int(app.MaxEventWait/time.Second))
		}
		q.Wait = time.Duration(n) * time.Second
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	page, err := s.app.Events(ctx, p, q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, eventPage{Events: page.Events, NextCursor: page.Next, Missed: page.Missed})
}
