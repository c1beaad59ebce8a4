package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/search"
)

// The search page: a quick search (with suggestions as one types), an
// advanced search (text, format, repository, upload dates, pages) and a
// search by checksum, each a GET form whose answer is this page; an
// administrator also sees the search index and may reindex.

type searchPage struct {
	Mode string // quick, advanced or checksum: the form answered
	// The forms' values.
	Q, Checksum string
	Adv         advancedForm
	Formats     []string
	// The answers: the one of Mode, once searched.
	Quick    search.QuickAnswer
	Advanced search.AdvancedAnswer
	Files    search.ChecksumAnswer
	Pager    pager

	Searched   bool
	Err, Field string
	Index      *app.ReindexStatus // administrators only
}

type advancedForm struct{ Query, Format, Repository, MinDate, MaxDate string }

func (p searchPage) formError() string { return p.Err }

// quickLimit is the quick search's results on the page.
const quickLimit = 50

func (u *UI) search(w http.ResponseWriter, c *call) error {
	q := c.r.URL.Query()
	p := searchPage{Mode: q.Get("mode"), Q: strings.TrimSpace(q.Get("q")), Checksum: strings.TrimSpace(q.Get("checksum")), Formats: all.Names(),
		Adv: advancedForm{Query: strings.TrimSpace(q.Get("query")), Format: q.Get("format"), Repository: strings.TrimSpace(q.Get("repository")),
			MinDate: q.Get("min_date"), MaxDate: q.Get("max_date")}}
	ask := url.Values{}
	switch {
	case p.Mode == "advanced":
		pg := pageOf(c.r)
		ask = url.Values{"query": {p.Adv.Query}, "format": {p.Adv.Format}, "repository": {p.Adv.Repository}, "min_date": {p.Adv.MinDate},
			"max_date": {p.Adv.MaxDate}, "page": {strconv.Itoa(pg.Number)}, "limit": {strconv.Itoa(pg.Limit)}}
	case p.Mode == "checksum" || p.Checksum != "":
		p.Mode = "checksum"
		ask.Set("checksum", p.Checksum)
	default:
		p.Mode = "quick"
		ask = url.Values{"q": {p.Q}, "limit": {strconv.Itoa(quickLimit)}}
	}
	p.Searched = p.Mode == "advanced" || ask.Get("q") != "" || ask.Get("checksum") != ""
	if !p.Searched {
		return u.render(w, c, 0, "search", "Search", u.searchIndex(c, p))
	}
	out, err := u.d.App.Search(c.r.Context(), c.p, p.Mode, ask)
	if e, ok := refused(err, &p.Field); ok {
		p.Err, p.Searched = e.Message, false
		if p.Field == "repository_id" {
			p.Field = "repository"
		}
		return u.render(w, c, e.Status(), "search", "Search", u.searchIndex(c, p))
	}
	if err != nil {
		return err
	}
	switch a := out.(type) {
	case search.QuickAnswer:
		p.Quick = a
	case search.AdvancedAnswer:
		p.Advanced = a
		p.Pager = pagerOf(c.r, app.Page{Number: a.Page, Limit: a.Limit}, a.Total)
	case search.ChecksumAnswer:
		p.Files = a
	}
	return u.render(w, c, 0, "search", "Search", u.searchIndex(c, p))
}

// searchIndex adds the index's state for an administrator.
func (u *UI) searchIndex(c *call, p searchPage) searchPage {
	if c.p.IsAdmin() {
		if st, err := u.d.App.ReindexState(c.r.Context(), c.p); err == nil {
			p.Index = &st
		}
	}
	return p
}

// suggest answers the quick search box's completions as JSON.
func (u *UI) suggest(w http.ResponseWriter, c *call) error {
	out, err := u.d.App.Search(c.r.Context(), c.p, "suggest", url.Values{"q": {c.r.URL.Query().Get("q")}})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(out)
}

// reindex starts a reindex (administrators).
func (u *UI) reindex(w http.ResponseWriter, c *call) error {
	_, _, err := u.d.App.StartReindex(c.r.Context(), c.p)
	return u.after(w, c, err, "Reindex started: every artifact is read again in the background; searches keep answering meanwhile.", Prefix+"/search")
}
