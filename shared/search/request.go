package search

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/meta"
)

// The searches as the API asks and answers them: checking a request's
// parameters and the answers' bodies, one definition for origins and
// edges.

// DefaultLimit is a quick search's and a suggestion's limit when the
// caller gives none (the spec's 10).
const DefaultLimit = 10

// MaxChecksumResults bounds a checksum search's answer (the same bytes
// stored in that many places is a rarity).
const MaxChecksumResults = 1000

// QuickAnswer is the answer of GET /search/quick (the spec's body).
type QuickAnswer struct {
	Results []Result `json:"results"`
}

// SuggestAnswer is the answer of GET /search/suggest.
type SuggestAnswer struct {
	Query       string       `json:"query"`
	Suggestions []Suggestion `json:"suggestions"`
}

// AdvancedAnswer is a page of GET /search/advanced.
type AdvancedAnswer struct {
	Results []Result `json:"results"`
	Total   int      `json:"total"`
	Page    int      `json:"page"`
	Limit   int      `json:"limit"`
	// Truncated: the search stopped at its bound of index entries read;
	// more may match than total says (narrow the query).
	Truncated bool `json:"truncated"`
}

// ChecksumAnswer is the answer of GET /search/checksum.
type ChecksumAnswer struct {
	Checksum  string                `json:"checksum"`
	Algorithm string                `json:"algorithm"` // md5, sha1 or sha256
	Results   []format.ArtifactView `json:"results"`
	Total     int                   `json:"total"`
}

// CheckText validates a query's text: at most MaxQuery bytes, and not
// blank when required.
func CheckText(field, q string, required bool) error {
	switch {
	case required && strings.TrimSpace(q) == "":
		return apierr.Invalid(field, "%s is required: the text to search for", field)
	case len(q) > MaxQuery:
		return apierr.Invalid(field, "%s is longer than %d bytes", field, MaxQuery)
	}
	return nil
}

// ParseLimit reads a limit parameter ("": DefaultLimit).
func ParseLimit(v string) (int, error) {
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, apierr.Invalid("limit", "limit must be an integer from 1 to %d", MaxLimit)
	}
	return n, nil
}

// Dates reads an advanced search's min_date and max_date: ISO dates
// (2026-01-02) or RFC 3339 times; uploaded at or after min_date, before
// max_date (a date: before the end of that day, so the day is included).
func Dates(minDate, maxDate string) (after, before time.Time, err error) {
	parse := func(field, v string, end bool) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, nil
		}
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return t, apierr.Invalid(field, "%s must be an ISO date (2026-01-02) or an RFC 3339 time", field)
		}
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	if after, err = parse("min_date", minDate, false); err != nil {
		return
	}
	if before, err = parse("max_date", maxDate, true); err != nil {
		return
	}
	if !after.IsZero() && !before.IsZero() && !after.Before(before) {
		err = apierr.Invalid("max_date", "max_date must be after min_date")
	}
	return
}

// ChecksumAlgorithm is the algorithm a hexadecimal checksum of that
// length is: md5 (32), sha1 (40) or sha256 (64).
func ChecksumAlgorithm(hex string) (string, error) {
	bad := apierr.Invalid("checksum", "checksum must be an MD5 (32), SHA-1 (40) or SHA-256 (64) in hexadecimal")
	for _, r := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return "", bad
		}
	}
	switch len(hex) {
	case 32:
		return "md5", nil
	case 40:
		return "sha1", nil
	case 64:
		return "sha256", nil
	}
	return "", bad
}

// Caller is what a search needs to know of who asks: the repositories
// they may read (all of them, for the searches that walk indexes), or
// whether they may read one (for the checksum search, which finds few
// files), and the id of a repository they name (by name or id) and may
// read, or the error to answer.
type Caller struct {
	Readable func() ([]string, error)
	MayRead  func(repoID string) bool
	Repo     func(ref string) (string, error)
}

// CallerOf is principal p as a search asks of them, in tx; repo
// resolves a repository p names and may read (an origin's rule and an
// edge's are each their own).
func CallerOf(tx *meta.Tx, p *auth.Principal, repo func(ref string) (*meta.Repository, error)) Caller {
	return Caller{
		Readable: func() ([]string, error) { return auth.Readable(tx, p) },
		MayRead: func(id string) bool {
			r, err := tx.Repo(id)
			if err != nil {
				return false
			}
			ok, err := auth.Can(tx, p, r, meta.ActionRead)
			return err == nil && ok
		},
		Repo: func(ref string) (string, error) {
			r, err := repo(ref)
			if err != nil {
				return "", err
			}
			return r.ID, nil
		},
	}
}

// Serve answers the search kind (quick, advanced, checksum, suggest) the
// query asks, from tx, among what the caller may read. Pages of an
// advanced search are of at most MaxLimit, 20 when not asked.
func Serve(tx *meta.Tx, who Caller, kind string, q url.Values) (any, error) {
	switch kind {
	case "quick", "suggest":
		text := q.Get("q")
		if err := CheckText("q", text, true); err != nil {
			return nil, err
		}
		limit, err := ParseLimit(q.Get("limit"))
		if err != nil {
			return nil, err
		}
		readable, err := who.Readable()
		if err != nil {
			return nil, err
		}
		if kind == "quick" {
			return QuickAnswer{Results: Quick(tx, readable, text, limit)}, nil
		}
		return SuggestAnswer{Query: text, Suggestions: Suggest(tx, readable, text, limit)}, nil
	case "checksum":
		sum := q.Get("checksum")
		algo, err := ChecksumAlgorithm(sum)
		if err != nil {
			return nil, err
		}
		out := ChecksumAnswer{Checksum: sum, Algorithm: algo, Results: []format.ArtifactView{}}
		for _, a := range Checksum(tx, who.MayRead, algo, sum, MaxChecksumResults) {
			if r, err := tx.Repo(a.RepositoryID); err == nil {
				out.Results = append(out.Results, format.ViewArtifact(a, r.Name))
			}
		}
		out.Total = len(out.Results)
		return out, nil
	case "advanced":
		in := Query{Text: q.Get("query"), Format: q.Get("format")}
		if err := CheckText("query", in.Text, false); err != nil {
			return nil, err
		}
		if in.Format != "" && !all.Known(in.Format) {
			return nil, apierr.Invalid("format", "unknown format %q; known: %s", in.Format, strings.Join(all.Names(), ", "))
		}
		var err error
		if in.After, in.Before, err = Dates(q.Get("min_date"), q.Get("max_date")); err != nil {
			return nil, err
		}
		page, limit := 1, 20
		if v := q.Get("page"); v != "" {
			if page, err = strconv.Atoi(v); err != nil || page < 1 || page > 1_000_000 {
				return nil, apierr.Invalid("page", "page must be an integer from 1 to 1000000")
			}
		}
		if v := q.Get("limit"); v != "" {
			if limit, err = ParseLimit(v); err != nil {
				return nil, err
			}
		}
		if ref := q.Get("repository"); ref != "" {
			if in.RepoID, err = who.Repo(ref); err != nil {
				return nil, err
			}
		}
		readable, err := who.Readable()
		if err != nil {
			return nil, err
		}
		in.Offset, in.Limit = (page-1)*limit, limit
		p := Advanced(tx, readable, in)
		return AdvancedAnswer{Results: p.Results, Total: p.Total, Page: page, Limit: limit, Truncated: p.Truncated}, nil
	}
	return nil, apierr.New(apierr.NotFound, "no search %q: quick, advanced, checksum or suggest", kind)
}
