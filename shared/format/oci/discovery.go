package oci

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// maxPage bounds one page of tags or repositories.
const maxPage = 10000

// pageSize reads ?n=: absent means everything (up to maxPage).
func pageSize(r *format.Request) (int, error) {
	s := r.Query.Get("n")
	if s == "" {
		return maxPage, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errf(http.StatusBadRequest, codePaginationInvalid, "n must be a non-negative integer")
	}
	return min(n, maxPage), nil
}

// paged answers a list document with a Link to the next page when more
// remain.
func paged(r *format.Request, base string, key string, sorted []string, doc map[string]any) (*format.Response, error) {
	n, err := pageSize(r)
	if err != nil {
		return nil, err
	}
	page, more := Page(sorted, n, r.Query.Get("last"))
	if page == nil {
		page = []string{}
	}
	doc[key] = page
	resp := format.JSON(http.StatusOK, doc)
	if more && len(page) > 0 {
		q := url.Values{"n": {strconv.Itoa(n)}, "last": {page[len(page)-1]}}
		resp.Header.Set("Link", "<"+base+"?"+q.Encode()+`>; rel="next"`)
	}
	return resp, nil
}

// tags lists an image's tags in lexical order.
func (f *Format) tags(_ context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	var arts []meta.Artifact
	var manifests int
	err = f.read(repo, func(v view) error {
		var err error
		arts, err = v.tagArtifacts(n.Image)
		manifests = len(v.tx.KVList(repo.ID, manifestKey(n.Image, "")))
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(arts) == 0 && manifests == 0 {
		return nil, nameUnknown(n.String())
	}
	tags := make([]string, 0, len(arts))
	for _, a := range arts {
		tags = append(tags, strings.TrimPrefix(a.Path, n.Image+":"))
	}
	sort.Strings(tags)
	return paged(r, nameURL(r, n, "tags", "list"), "tags", tags, map[string]any{"name": n.String()})
}

// catalog lists the images of the repositories the caller may read. A
// page visits repositories in catalog order from the one ?last= is in,
// and stops once it has one name more than it shows: its cost is the
// repositories it reads (their images' keys only), not the registry.
// The repositories in catalog order and each one's images are remembered
// while they stay the same (catalogMemos).
func (f *Format) catalog(_ context.Context, r *format.Request) (*format.Response, error) {
	if !r.Principal.Granted("registry", "catalog", "*") {
		return nil, errf(http.StatusUnauthorized, codeUnauthorized, "the token does not grant the catalog")
	}
	n, err := pageSize(r)
	if err != nil {
		return nil, err
	}
	last := r.Query.Get("last")
	repos, err := f.catalogRepos()
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range repos {
		repo, p := &repos[i].repo, repos[i].prefix
		if last >= p && !strings.HasPrefix(last, p) {
			continue // the whole run sorts before last
		}
		var ok bool
		if err := f.Env.View(func(tx *meta.Tx) error { ok, err = auth.Can(tx, r.Principal, repo, meta.ActionRead); return err }); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		imgs, err := f.images(repo.ID)
		if err != nil {
			return nil, err
		}
		for _, img := range imgs {
			if name := p + img; name > last {
				names = append(names, name)
			}
		}
		if len(names) > n {
			break
		}
	}
	return paged(r, format.URL(r, Prefix, "_catalog"), "repositories", names, map[string]any{})
}

// The catalog's memos: the repositories of this format in catalog order
// (while no repository changes), and the sorted images of each (while its
// manifests stay the same; a repository of more than maxRememberedImages
// images is read each time, bounding what is kept).
type catalogMemos struct {
	repos  *meta.Memo[string, []catalogRepo]
	images *meta.Memo[string, []string]
}

const (
	maxRememberedImages = 10_000
	maxRememberedRepos  = 1_000
)

// catalogRepo is a repository with its names' prefix in the catalog.
type catalogRepo struct {
	repo   meta.Repository // without its totals
	prefix string
}

func (f *Format) memos() *catalogMemos {
	f.memoOnce.Do(func() {
		f.memo = &catalogMemos{
			repos:  meta.NewMemo[string, []catalogRepo](f.Env.Meta, 1, []meta.Kind{meta.KindRepo}, nil),
			images: meta.NewMemo[string, []string](f.Env.Meta, maxRememberedRepos, nil, []meta.Kind{meta.KindKV}),
		}
	})
	return f.memo
}

// catalogRepos are this format's repositories in catalog order: every
// name of a repository starts with "<repository>/", and no such prefix
// starts another, so in prefix order each repository's names are one run
// of the sorted catalog.
func (f *Format) catalogRepos() ([]catalogRepo, error) {
	return f.memos().repos.Get("", "", func(tx *meta.Tx) ([]catalogRepo, bool, error) {
		all, err := tx.Repos()
		if err != nil {
			return nil, false, err
		}
		var out []catalogRepo
		for _, repo := range all {
			if repo.Format == Name {
				out = append(out, catalogRepo{repo: repo.WithoutTotals(), prefix: strings.ToLower(repo.Name) + "/"})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].prefix < out[j].prefix })
		return out, true, nil
	})
}

// images are the sorted image names of repository id.
func (f *Format) images(id string) ([]string, error) {
	return f.memos().images.Get(id, id, func(tx *meta.Tx) ([]string, bool, error) {
		imgs := (view{tx: tx, repo: &meta.Repository{ID: id}}).images()
		sort.Strings(imgs)
		return imgs, len(imgs) <= maxRememberedImages, nil
	})
}

// referrers lists the manifests whose subject is the digest, as an OCI
// index; an unknown digest has an empty list, never a 404.
func (f *Format) referrers(_ context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	digest := r.Param("ref")
	if _, _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	want := r.Query.Get("artifactType")
	descs := []Descriptor{}
	var pairs []meta.KVPair
	if err := f.read(repo, func(v view) error { pairs = v.tx.KVList(repo.ID, referrerKey(n.Image, digest, "")); return nil }); err != nil {
		return nil, err
	}
	for _, kv := range pairs {
		var d Descriptor
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, err
		}
		if want == "" || d.ArtifactType == want {
			descs = append(descs, d)
		}
	}
	resp := format.JSON(http.StatusOK, map[string]any{"schemaVersion": 2, "mediaType": MediaOCIIndex, "manifests": descs})
	resp.Header.Set("Content-Type", MediaOCIIndex)
	if want != "" {
		resp.Header.Set("OCI-Filters-Applied", "artifactType")
	}
	return resp, nil
}
