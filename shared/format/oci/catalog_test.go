package oci_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestCatalogPages: the catalog lists the images of the repositories the
// caller may read in sorted order, and following its Link pages from any
// page size gives every name once, also where a repository's name is a
// prefix of another's ("a" and "a-b": "a-b/..." sorts first).
func TestCatalogPages(t *testing.T) {
	e := formattest.New(t)
	ctx := context.Background()
	now := time.Now().UTC()
	apply := func(c meta.Command) {
		t.Helper()
		if _, err := e.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	repos := map[string][]string{ // repository -> images
		"a":       {"x", "y/z", "y-z", "y.z"},
		"a-b":     {"q"},
		"a.c":     {"img"},
		"b":       {"one", "two"},
		"private": {"hidden"},
		"granted": {"shown"},
		"empty":   nil,
	}
	for _, name := range slices.Sorted(maps.Keys(repos)) {
		id := "id-" + name
		apply(&meta.RepoCreate{Repo: meta.Repository{ID: id, Name: name, Format: "docker", CreatedAt: now,
			Public: name != "private" && name != "granted"}})
		var ops []meta.KVOp
		for _, img := range repos[name] {
			for _, d := range []string{digest, "sha256:" + "f" + digest[8:len(digest)-1]} { // two manifests
				ops = append(ops, meta.KVOp{Key: "m/" + img + "@" + d, Value: json.RawMessage(`{"addr":"` + d + `"}`)})
			}
		}
		if len(ops) > 0 {
			apply(&meta.KVApply{RepoID: id, Ops: ops})
		}
	}
	apply(&meta.RepoCreate{Repo: meta.Repository{ID: "id-files", Name: "files", Format: "generic", Public: true, CreatedAt: now}})
	secret, hash, err := auth.NewAPIToken()
	if err != nil {
		t.Fatal(err)
	}
	apply(&meta.UserCreate{User: meta.User{ID: "u1", Username: "carol", Role: meta.RoleUser, CreatedAt: now, UpdatedAt: now}})
	apply(&meta.TokenCreate{Token: meta.Token{ID: "t1", UserID: "u1", Name: "t", Scopes: []string{"repository:read"}, Hash: hash, CreatedAt: now}})
	apply(&meta.PermissionCreate{Permission: meta.Permission{ID: "p1", RepositoryID: "id-granted", UserID: "u1",
		Permissions: []string{meta.ActionRead}, CreatedAt: now}})

	srv := e.Node(func(env *format.Env) []format.Format { return []format.Format{oci.New(env)} })
	get := func(user, password, path string) ([]string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Repositories []string `json:"repositories"`
		}
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s as %s: %d %s", path, user, resp.StatusCode, body)
		}
		next := ""
		if m := regexp.MustCompile(`<([^>]+)>`).FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			u, err := url.Parse(m[1])
			if err != nil {
				t.Fatal(err)
			}
			next = u.RequestURI()
		}
		return doc.Repositories, next
	}
	all := []string{"a-b/q", "a.c/img", "a/x", "a/y-z", "a/y.z", "a/y/z", "b/one", "b/two", "granted/shown", "private/hidden"}
	if !slices.IsSorted(all) {
		t.Fatal("the expected list is not sorted")
	}
	for _, who := range []struct {
		user, password string
		want           []string
	}{
		{"admin", e.Token, all},
		{"carol", secret, slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "private/hidden" })},
	} {
		if got, next := get(who.user, who.password, "/v2/_catalog"); !reflect.DeepEqual(got, who.want) || next != "" {
			t.Errorf("catalog as %s = %v (next %q), want %v", who.user, got, next, who.want)
		}
		for n := 1; n <= len(who.want); n++ {
			var got []string
			path := "/v2/_catalog?n=" + strconv.Itoa(n)
			for pages := 0; path != ""; pages++ {
				if pages > len(who.want) {
					t.Fatalf("n=%d as %s: the pages do not end", n, who.user)
				}
				page, next := get(who.user, who.password, path)
				if len(page) > n {
					t.Errorf("n=%d: a page of %d", n, len(page))
				}
				got, path = append(got, page...), next
			}
			if !reflect.DeepEqual(got, who.want) {
				t.Errorf("n=%d as %s: pages give %v, want %v", n, who.user, got, who.want)
			}
		}
	}
	if got, _ := get("admin", e.Token, "/v2/_catalog?last=a/y.z&n=2"); !reflect.DeepEqual(got, []string{"a/y/z", "b/one"}) {
		t.Errorf("after a/y.z: %v", got)
	}

	// What the catalog remembers follows every change at once: an image
	// pushed, a repository created and one deleted, a grant revoked.
	apply(&meta.KVApply{RepoID: "id-b", Ops: []meta.KVOp{{Key: "m/three@" + digest, Value: json.RawMessage(`{"addr":"` + digest + `"}`)}}})
	apply(&meta.RepoCreate{Repo: meta.Repository{ID: "id-c", Name: "c", Format: "docker", Public: true, CreatedAt: now}})
	apply(&meta.KVApply{RepoID: "id-c", Ops: []meta.KVOp{{Key: "m/new@" + digest, Value: json.RawMessage(`{"addr":"` + digest + `"}`)}}})
	apply(&meta.RepoDelete{ID: "id-a-b"})
	apply(&meta.PermissionDelete{ID: "p1"})
	changed := []string{"a.c/img", "a/x", "a/y-z", "a/y.z", "a/y/z", "b/one", "b/three", "b/two", "c/new", "granted/shown", "private/hidden"}
	if got, _ := get("admin", e.Token, "/v2/_catalog"); !reflect.DeepEqual(got, changed) {
		t.Errorf("after the changes, as admin: %v, want %v", got, changed)
	}
	changed = slices.DeleteFunc(changed, func(s string) bool { return s == "private/hidden" || s == "granted/shown" })
	if got, _ := get("carol", secret, "/v2/_catalog"); !reflect.DeepEqual(got, changed) {
		t.Errorf("after the changes, as carol: %v, want %v", got, changed)
	}
}
