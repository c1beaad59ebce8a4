package npm

import (
	"net/http"
	"strings"
	"testing"
)

func TestParseRoute(t *testing.T) {
	scoped := Name{Scope: "acme", Base: "w"}
	plain := Name{Base: "demo"}
	cases := []struct {
		method, path string
		want         Endpoint
	}{
		{"GET", "/r/-/ping", Endpoint{Kind: KindPing, Repo: "r"}},
		{"GET", "/r/-/whoami", Endpoint{Kind: KindWhoami, Repo: "r"}},
		{"GET", "/r/-/v1/search", Endpoint{Kind: KindSearch, Repo: "r"}},
		{"GET", "/r/demo", Endpoint{Kind: KindPackument, Repo: "r", Name: plain}},
		{"HEAD", "/r/demo", Endpoint{Kind: KindPackument, Repo: "r", Name: plain}},
		{"GET", "/r/@acme/w", Endpoint{Kind: KindPackument, Repo: "r", Name: scoped}},
		{"PUT", "/r/@acme/w", Endpoint{Kind: KindPublish, Repo: "r", Name: scoped}},
		{"GET", "/r/@acme/w/1.0.0", Endpoint{Kind: KindVersion, Repo: "r", Name: scoped, Spec: "1.0.0"}},
		{"GET", "/r/demo/latest", Endpoint{Kind: KindVersion, Repo: "r", Name: plain, Spec: "latest"}},
		{"GET", "/r/@acme/w/-/w-1.0.0.tgz", Endpoint{Kind: KindTarball, Repo: "r", Name: scoped, File: "w-1.0.0.tgz"}},
		{"PUT", "/r/demo/-rev/3-abc", Endpoint{Kind: KindRevPut, Repo: "r", Name: plain, Rev: "3-abc"}},
		{"DELETE", "/r/@acme/w/-rev/1", Endpoint{Kind: KindPackageDelete, Repo: "r", Name: scoped, Rev: "1"}},
		{"DELETE", "/r/demo/-/demo-1.0.0.tgz/-rev/2", Endpoint{Kind: KindTarballDelete, Repo: "r", Name: plain, File: "demo-1.0.0.tgz", Rev: "2"}},
		{"GET", "/r/-/package/@acme/w/dist-tags", Endpoint{Kind: KindTags, Repo: "r", Name: scoped}},
		{"PUT", "/r/-/package/demo/dist-tags/beta", Endpoint{Kind: KindTagPut, Repo: "r", Name: plain, Spec: "beta"}},
		{"DELETE", "/r/-/package/demo/dist-tags/beta", Endpoint{Kind: KindTagDelete, Repo: "r", Name: plain, Spec: "beta"}},
	}
	for _, c := range cases {
		got, err := ParseRoute(c.method, c.path)
		if err != nil || got != c.want {
			t.Errorf("ParseRoute(%s %s) = %+v, %v; want %+v", c.method, c.path, got, err, c.want)
		}
	}
	bad := []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/r"}, {"GET", "/r/"}, {"POST", "/r/demo"}, {"DELETE", "/r/demo"},
		{"GET", "/r/Demo"}, {"GET", "/r/@acme"}, {"GET", "/r/demo/-/"}, {"GET", "/r/demo/-/.."},
		{"GET", "/r/demo/a/b/c"}, {"PUT", "/r/-/package/demo/dist-tags/1.0.0"}, {"GET", "/r/-/nope"},
		{"GET", "/../demo"}, {"GET", "/r/../x"}, {"PUT", "/r/demo/-rev/"}, {"GET", "/r/-/package/demo"},
		{"DELETE", "/r/demo/-/f.tgz/-rev/.."}, {"GET", "/r/" + strings.Repeat("a", 3000)},
	}
	for _, c := range bad {
		if got, err := ParseRoute(c.method, c.path); err == nil {
			t.Errorf("ParseRoute(%s %s) = %+v, want an error", c.method, c.path, got)
		}
	}
}

func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"/r/demo", "/r/@acme/w/-/w-1.0.0.tgz", "/r/-/package/@a/b/dist-tags/x",
		"/r/demo/-/demo-1.0.0.tgz/-rev/1", "/r/../x", "/r/@a/../b"} {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			f.Add(m, s)
		}
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		e, err := ParseRoute(method, path)
		if err != nil {
			return
		}
		if e.Kind == 0 {
			t.Fatalf("%s %q routed to no endpoint", method, path)
		}
		// Every routed value is safe to use as a path segment or key part.
		for _, s := range []string{e.Repo, e.Name.Scope, e.Name.Base, e.Spec, e.File, e.Rev} {
			if s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") {
				t.Fatalf("%s %q routed with unsafe part %q: %+v", method, path, s, e)
			}
		}
		if e.Repo == "" {
			t.Fatalf("%s %q routed without a repository", method, path)
		}
		if e.Kind != KindPing && e.Kind != KindWhoami && e.Kind != KindSearch {
			if _, err := ParseName(e.Name.String()); err != nil {
				t.Fatalf("%s %q routed with invalid name %+v", method, path, e.Name)
			}
		}
		if (e.Kind == KindTagPut || e.Kind == KindTagDelete) && CheckTag(e.Spec) != nil {
			t.Fatalf("%s %q routed with invalid tag %q", method, path, e.Spec)
		}
	})
}
