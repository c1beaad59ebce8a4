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
func (f *Format) catalog(_ context.Context, r *format.Request) (*format.Response, error) {
	if !r.Principal.Granted("registry", "catalog", "*") {
		return nil, errf(http.StatusUnauthorized, codeUnauthorized, "the token does not grant the catalog")
	}
	n, err := pageSize(r)
	if err != nil {
		return nil, err
	}
	last := r.Query.Get("last")
	var names []string
	err = f.Env.View(func(tx *meta.Tx) error {
		all, err := tx.Repos()
		if err != nil {
			return err
		}
		// Every name of a repository starts with "<repository>/", and no
		// such prefix starts another: in prefix order, each repository's
		// names are one run of the sorted catalog.
		var repos []meta.Repository
		for _, repo := range all {
			if repo.Format == Name {
				repos = append(repos, repo)
			}
		}
		prefix := func(repo *meta.Repository) string { return strings.ToLower(repo.Name) + "/" }
		sort.Slice(repos, func(i, j int) bool { return prefix(&repos[i]) < prefix(&repos[j]) })
		for i := range repos {
			repo, p := &repos[i], prefix(&repos[i])
			if last >= p && !strings.HasPrefix(last, p) {
				continue // the whole run sorts before last
			}
			if ok, err := auth.Can(tx, r.Principal, repo, meta.ActionRead); err != nil {
				return err
			} else if !ok {
				continue
			}
			imgs := (view{tx: tx, repo: repo}).images()
			sort.Strings(imgs)
			for _, img := range imgs {
				if name := p + img; name > last {
					names = append(names, name)
				}
			}
			if len(names) > n {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return paged(r, format.URL(r, Prefix, "_catalog"), "repositories", names, map[string]any{})
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
