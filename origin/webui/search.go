package webui

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/search"
)

// The search page: a quick search (with suggestions as one types), an
// advanced search (text, format, repository, upload dates, pages) and a
// search by checksum, each a GET form whose answer is this page; an
// administrator also sees the search index and may reindex.

type searchPage struct {
	Mode string // quick, advanced or checksum: the form answered
	// Quick search.
	Q     string
	Quick []search.Result
	// Advanced search.
	Adv      app.AdvancedQuery
	Advanced app.AdvancedResult
	Pager    pager
	Formats  []string
	// Checksum search.
	Checksum  string
	Algorithm string
	Files     []format.ArtifactView

	Searched   bool
	Err, Field string
	Index      *app.ReindexStatus // administrators only
}

func (p searchPage) formError() string { return p.Err }

func (u *UI) search(w http.ResponseWriter, c *call) error {
	q := c.r.URL.Query()
	p := searchPage{Mode: q.Get("mode"), Q: strings.TrimSpace(q.Get("q")), Checksum: strings.TrimSpace(q.Get("checksum")),
		Formats: all.Names(), Adv: app.AdvancedQuery{Query: strings.TrimSpace(q.Get("query")), Format: q.Get("format"),
			Repository: strings.TrimSpace(q.Get("repository")), MinDate: q.Get("min_date"), MaxDate: q.Get("max_date")}}
	var err error
	switch {
	case p.Mode == "advanced":
		p.Adv.Page = pageOf(c.r)
		p.Advanced, err = u.d.App.AdvancedSearch(c.r.Context(), c.p, p.Adv)
		p.Pager = pagerOf(c.r, p.Advanced.Page, p.Advanced.Total)
	case p.Checksum != "":
		p.Mode = "checksum"
		p.Algorithm, p.Files, err = u.d.App.SearchChecksum(c.r.Context(), c.p, p.Checksum)
	case p.Q != "":
		p.Mode = "quick"
		p.Quick, err = u.d.App.QuickSearch(c.r.Context(), c.p, p.Q, 50)
	default:
		p.Mode = "quick"
	}
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.render(w, c, e.Status(), "search", "Search", u.searchIndex(c, p))
	}
	if err != nil {
		return err
	}
	p.Searched = p.Q != "" || p.Checksum != "" || p.Mode == "advanced"
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
	limit, _ := strconv.Atoi(c.r.URL.Query().Get("limit"))
	found, err := u.d.App.Suggest(c.r.Context(), c.p, c.r.URL.Query().Get("q"), min(max(limit, 0), search.MaxLimit))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]any{"suggestions": found})
}

// reindex starts a reindex (administrators).
func (u *UI) reindex(w http.ResponseWriter, c *call) error {
	_, _, err := u.d.App.StartReindex(c.r.Context(), c.p)
	var field string
	if e, ok := refused(err, &field); ok {
		u.flash(w, c.r, e.Message)
	} else if err != nil {
		return err
	} else {
		u.flash(w, c.r, "Reindex started: every artifact is read again in the background; searches keep answering meanwhile.")
	}
	http.Redirect(w, c.r, Prefix+"/search", http.StatusSeeOther)
	return nil
}
