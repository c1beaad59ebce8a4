package webui

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// The event log page: the newest events the user may see, filtered by
// event and repository, older ones by page, and new ones as they come
// (static/depot.js long-polls /ui/events/live and adds them on top).

// eventRow is an event as the page shows it.
type eventRow struct {
	Cursor     string    `json:"cursor"`
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	When       string    `json:"when"`
	Repository string    `json:"repository"`
	Subject    string    `json:"subject"`
	Actor      string    `json:"actor"`
}

func eventRowOf(e app.Event) eventRow {
	var d struct {
		RepositoryName string `json:"repository_name"`
		PackageName    string `json:"package_name"`
		Version        string `json:"version"`
		Username       string `json:"username"`
		Format         string `json:"format"`
		Uploader       *meta.Actor
		Downloader     *meta.Actor
		CreatedBy      *meta.Actor `json:"created_by"`
		DeletedBy      *meta.Actor `json:"deleted_by"`
	}
	_ = json.Unmarshal(e.Data, &d)
	r := eventRow{Cursor: e.Cursor, Event: e.Event, Time: e.Timestamp, When: e.Timestamp.UTC().Format("2006-01-02 15:04:05 UTC"),
		Repository: d.RepositoryName}
	switch {
	case d.PackageName != "":
		r.Subject = strings.TrimSpace(d.PackageName + " " + d.Version)
	case d.Username != "":
		r.Subject = d.Username
	case d.Format != "":
		r.Subject = d.Format
	}
	for _, a := range []*meta.Actor{d.Uploader, d.Downloader, d.CreatedBy, d.DeletedBy} {
		if a != nil && a.Username != "" {
			r.Actor = a.Username
			break
		}
	}
	return r
}

type eventsPage struct {
	Rows       []eventRow
	Types      []string
	Type       string
	Repository string
	Older      string // a link to older events, "" at the oldest
	Live       string // where new events are asked for, "" on older pages
}

const eventsPerPage = 50

// eventFilters reads ?type= and ?repository= (a name) into the app's.
func (u *UI) eventFilters(c *call) (types []string, repoID string, err error) {
	q := c.r.URL.Query()
	if t := q.Get("type"); t != "" {
		types = []string{t}
	}
	if name := q.Get("repository"); name != "" {
		repo, err := u.d.App.GetRepository(c.r.Context(), c.p, name)
		if err != nil {
			return nil, "", err
		}
		repoID = repo.ID
	}
	return types, repoID, nil
}

func (u *UI) events(w http.ResponseWriter, c *call) error {
	types, repoID, err := u.eventFilters(c)
	if err != nil {
		return err
	}
	q := c.r.URL.Query()
	before := q.Get("before")
	evs, older, err := u.d.App.RecentEvents(c.r.Context(), c.p, types, repoID, before, eventsPerPage)
	if err != nil {
		return err
	}
	p := eventsPage{Types: meta.EventNames, Type: q.Get("type"), Repository: q.Get("repository")}
	for _, e := range evs {
		p.Rows = append(p.Rows, eventRowOf(e))
	}
	link := func(key, val string) string {
		v := c.r.URL.Query()
		v.Del("before")
		v.Del("since")
		if val != "" {
			v.Set(key, val)
		}
		return c.r.URL.Path + "?" + v.Encode()
	}
	if older != "" && len(evs) == eventsPerPage {
		p.Older = link("before", older)
	}
	if before == "" {
		since := "latest"
		if len(evs) > 0 {
			since = evs[0].Cursor
		}
		p.Live = strings.Replace(link("since", since), Prefix+"/events?", Prefix+"/events/live?", 1)
	}
	return u.render(w, c, 0, "events", "Events", p)
}

// liveWait is how long a live request waits for an event.
const liveWait = 25 * time.Second

// liveEvents answers, as JSON for the page's script, the events after
// ?since= (waiting for one up to liveWait) and the cursor to ask from
// next.
func (u *UI) liveEvents(w http.ResponseWriter, c *call) error {
	types, repoID, err := u.eventFilters(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	defer context.AfterFunc(u.draining, cancel)()
	page, err := u.d.App.Events(ctx, c.p, app.EventQuery{Since: c.r.URL.Query().Get("since"), Types: types, RepositoryID: repoID,
		Limit: 100, Wait: liveWait})
	if err != nil {
		return err
	}
	out := struct {
		Events []eventRow `json:"events"`
		Next   string     `json:"next_cursor"`
	}{Events: []eventRow{}, Next: page.Next}
	for _, e := range page.Events {
		out.Events = append(out.Events, eventRowOf(e))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(out)
}
