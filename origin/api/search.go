package api

import (
	"net/http"
	"strconv"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/search"
)

// checksumResults is the answer of a checksum search.
type checksumResults struct {
	Checksum  string                `json:"checksum"`
	Algorithm string                `json:"algorithm"`
	Results   []format.ArtifactView `json:"results"`
	Total     int                   `json:"total"`
}

func (s *Server) searchChecksum(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	sum := r.URL.Query().Get("checksum")
	algo, found, err := s.app.SearchChecksum(r.Context(), p, sum)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, checksumResults{Checksum: sum, Algorithm: algo, Results: found, Total: len(found)})
}

// quickResults is the answer of a quick search (the spec's body).
type quickResults struct {
	Results []search.Result `json:"results"`
}

// limitOf parses the limit parameter (0: absent).
func limitOf(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > search.MaxLimit {
		return 0, apierr.Invalid("limit", "limit must be an integer from 1 to %d", search.MaxLimit)
	}
	return n, nil
}

func (s *Server) searchQuick(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	limit, err := limitOf(r)
	if err != nil {
		return err
	}
	found, err := s.app.QuickSearch(r.Context(), p, r.URL.Query().Get("q"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, quickResults{Results: found})
}

// suggestions is the answer of a suggest.
type suggestions struct {
	Query       string              `json:"query"`
	Suggestions []search.Suggestion `json:"suggestions"`
}

func (s *Server) searchSuggest(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	limit, err := limitOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query().Get("q")
	found, err := s.app.Suggest(r.Context(), p, q, limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, suggestions{Query: q, Suggestions: found})
}

// advancedResults is a page of an advanced search.
type advancedResults struct {
	Results []search.Result `json:"results"`
	Total   int             `json:"total"`
	Page    int             `json:"page"`
	Limit   int             `json:"limit"`
	// Truncated: the search stopped at its bound of index entries read;
	// more may match than total says (narrow the query).
	Truncated bool `json:"truncated"`
}

func (s *Server) searchAdvanced(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	found, err := s.app.AdvancedSearch(r.Context(), p, app.AdvancedQuery{Query: q.Get("query"), Format: q.Get("format"),
		Repository: q.Get("repository"), MinDate: q.Get("min_date"), MaxDate: q.Get("max_date"), Page: pg})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, advancedResults{Results: found.Results, Total: found.Total, Page: found.Page.Number,
		Limit: found.Page.Limit, Truncated: found.Truncated})
}

func (s *Server) reindexState(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, err := s.app.ReindexState(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) startReindex(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	st, idx, err := s.app.StartReindex(r.Context(), p)
	return written(w, idx, err, http.StatusAccepted, st)
}
