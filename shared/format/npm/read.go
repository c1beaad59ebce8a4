package npm

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// load404 loads a package that must have at least one version.
func (f *Format) load404(repo *meta.Repository, n Name) (*pkgState, error) {
	st, err := f.load(repo, n)
	if err != nil {
		return nil, err
	}
	if len(st.Versions) == 0 {
		// npm publish GETs the packument first and expects this 404.
		return nil, format.NotFound("not found")
	}
	return st, nil
}

func (f *Format) packument(r *format.Request, e Endpoint) (*format.Response, error) {
	repo, st, err := f.pkg(r, e)
	if err != nil {
		return nil, err
	}
	// ?write=true (deprecate, unpublish) always gets the full document.
	if wantsAbbreviated(r.Header.Get("Accept")) && r.Query.Get("write") != "true" {
		return documentResponse(r, mediaAbbreviated, packument(r, repo.Name, st, true)), nil
	}
	return documentResponse(r, mediaJSON, packument(r, repo.Name, st, false)), nil
}

func (f *Format) version(r *format.Request, e Endpoint) (*format.Response, error) {
	repo, st, err := f.pkg(r, e)
	if err != nil {
		return nil, err
	}
	spec := e.Spec
	if t, ok := st.distTags()[spec]; ok {
		spec = t
	}
	v, ok := st.find(spec)
	if !ok {
		return nil, format.NotFound("version not found: %s@%s", e.Name, e.Spec)
	}
	return documentResponse(r, mediaJSON, versionDoc(r, repo.Name, st, v)), nil
}

func (f *Format) tarball(ctx context.Context, r *format.Request, e Endpoint) (*format.Response, error) {
	repo := r.Repo
	a, err := f.Env.Artifact(repo, e.Name.String()+"/-/"+e.File)
	if err != nil {
		return nil, format.NotFound("not found: %s/-/%s", e.Name, e.File)
	}
	return f.Env.Serve(r, a, false)
}

func (f *Format) tags(r *format.Request, e Endpoint) (*format.Response, error) {
	_, st, err := f.pkg(r, e)
	if err != nil {
		return nil, err
	}
	return documentResponse(r, mediaJSON, st.distTags()), nil
}

func (f *Format) ping(r *format.Request, e Endpoint) (*format.Response, error) {
	return jsonResponse(http.StatusOK, mediaJSON, map[string]any{}), nil
}

func (f *Format) whoami(r *format.Request, e Endpoint) (*format.Response, error) {
	if r.Principal.Anonymous() {
		return nil, format.Unauthorized()
	}
	return jsonResponse(http.StatusOK, mediaJSON, map[string]string{"username": r.Principal.Name()}), nil
}

// Search bounds.
const (
	searchDefaultSize = 20
	searchMaxSize     = 250
	searchMaxText     = 256
)

// searchHit is one object of a /-/v1/search answer.
type searchHit struct {
	Package struct {
		Name        string              `json:"name"`
		Version     string              `json:"version"`
		Description string              `json:"description,omitempty"`
		Keywords    []string            `json:"keywords,omitempty"`
		Date        string              `json:"date"`
		Links       map[string]string   `json:"links"`
		Publisher   map[string]string   `json:"publisher"`
		Maintainers []map[string]string `json:"maintainers"`
	} `json:"package"`
	Score struct {
		Final  float64            `json:"final"`
		Detail map[string]float64 `json:"detail"`
	} `json:"score"`
	SearchScore float64 `json:"searchScore"`
}

// search answers npm search: every word of text must occur in the name,
// description or keywords of the package's latest version.
func (f *Format) search(r *format.Request, e Endpoint) (*format.Response, error) {
	repo := r.Repo
	text := strings.ToLower(r.Query.Get("text"))
	if len(text) > searchMaxText {
		return nil, format.BadRequest("search text is longer than %d bytes", searchMaxText)
	}
	size := queryInt(r, "size", searchDefaultSize)
	size = max(1, min(size, searchMaxSize))
	from := max(0, queryInt(r, "from", 0))
	// Packages are matched on their names and search records, remembered
	// per repository (searchIndex); only the page's packages are loaded.
	index, err := f.searchIndex(repo)
	if err != nil {
		return nil, err
	}
	terms := strings.Fields(text)
	var states []*pkgState
	total := 0
	for _, e := range index {
		if !e.matches(terms) {
			continue
		}
		if total >= from && len(states) < size {
			st, err := f.load(repo, e.name)
			if err != nil {
				return nil, err
			}
			if len(st.Versions) == 0 {
				continue // a foreign record: nothing npm can show
			}
			states = append(states, st)
		}
		total++
	}
	var hits []searchHit
	for _, st := range states {
		n := st.Name
		v, _ := st.find(st.distTags()["latest"])
		var h searchHit
		h.Package.Name, h.Package.Version = n.String(), v.Raw
		h.Package.Description, h.Package.Keywords = st.Meta.Description, st.Meta.Keywords
		h.Package.Date = npmTime(v.A.UploadedAt)
		h.Package.Links = map[string]string{"npm": format.URL(r, r.Prefix, repo.Name, n.String())}
		h.Package.Publisher = map[string]string{"username": v.A.UploadedBy}
		h.Package.Maintainers = []map[string]string{{"username": v.A.UploadedBy}}
		h.Score.Final, h.Score.Detail = 1, map[string]float64{"quality": 1, "popularity": 1, "maintenance": 1}
		h.SearchScore = 1
		hits = append(hits, h)
	}
	if hits == nil {
		hits = []searchHit{}
	}
	return jsonResponse(http.StatusOK, mediaJSON, map[string]any{"objects": hits, "total": total,
		"time": npmTime(f.Env.Time())}), nil
}

// searchEntry is what search matches one package on: its name in lower
// case and its search record (description and keywords, lower case).
type searchEntry struct {
	name  Name
	lname string
	hay   string
}

// matches reports whether every term occurs in the name, description or
// keywords.
func (e *searchEntry) matches(terms []string) bool {
	for _, t := range terms {
		if !strings.Contains(e.lname, t) && !strings.Contains(e.hay, t) {
			return false
		}
	}
	return true
}

// maxRememberedSearch bounds the packages of a repository whose search
// entries are remembered; a larger repository is read at each search.
const maxRememberedSearch = 200_000

// searchIndex is the search entries of repo's packages in name order,
// remembered while its packages and their records stay the same. A
// package published before search records were kept is read from its
// package record; a name npm cannot parse is left out.
func (f *Format) searchIndex(repo *meta.Repository) ([]searchEntry, error) {
	return f.memos().searches.Get(repo.ID, repo.ID, func(tx *meta.Tx) ([]searchEntry, bool, error) {
		var out []searchEntry
		tx.PackageNames(repo.ID, func(name string) bool {
			n, err := ParseName(name)
			if err != nil {
				return true
			}
			e := searchEntry{name: n, lname: strings.ToLower(name)}
			if raw, ok := tx.KV(repo.ID, keyFind+name); ok {
				e.hay, _ = readFindText(raw)
			} else if raw, ok := tx.KV(repo.ID, keyPkg+name); ok {
				var m pkgMeta
				if json.Unmarshal(raw, &m) == nil {
					e.hay = findText(m)
				}
			}
			out = append(out, e)
			return true
		})
		return out, len(out) <= maxRememberedSearch, nil
	})
}

func queryInt(r *format.Request, key string, def int) int {
	n, err := strconv.Atoi(r.Query.Get(key))
	if err != nil {
		return def
	}
	return n
}

// keywords reads a manifest's keywords (a list of strings; anything else
// is ignored).
func keywords(manifest json.RawMessage) []string {
	return readManifest(manifest).keywords
}
