package webui

import (
	"net/http"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// The search page: by checksum today (exact MD5, SHA-1 or SHA-256); the
// quick, advanced and suggest searches of the search issue join it.

type searchPage struct {
	Checksum  string
	Algorithm string
	Searched  bool
	Results   []format.ArtifactView
	Err       string
	Field     string
}

func (p searchPage) formError() string { return p.Err }

func (u *UI) search(w http.ResponseWriter, c *call) error {
	p := searchPage{Checksum: strings.TrimSpace(c.r.URL.Query().Get("checksum"))}
	if p.Checksum == "" {
		return u.render(w, c, 0, "search", "Search", p)
	}
	algo, found, err := u.d.App.SearchChecksum(c.r.Context(), c.p, p.Checksum)
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.render(w, c, e.Status(), "search", "Search", p)
	}
	if err != nil {
		return err
	}
	p.Algorithm, p.Results, p.Searched = algo, found, true
	return u.render(w, c, 0, "search", "Search", p)
}
