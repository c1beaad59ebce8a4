package format

import (
	"net/http"
	"strings"
	"testing"
	"unicode"
)

func TestMatch(t *testing.T) {
	routes := []Route{
		{Method: http.MethodGet, Path: "/{repo}/index.json"},
		{Method: http.MethodPut, Path: "/{repo}/-/{name}"},
		{Method: http.MethodGet, Path: "/{repo}/files/{rest...}"},
	}
	cases := []struct {
		method, path string
		route        int // -1: none
		params       map[string]string
		pathOK       bool
	}{
		{"GET", "/r/index.json", 0, map[string]string{"repo": "r"}, true},
		{"HEAD", "/r/index.json", 0, map[string]string{"repo": "r"}, true},
		{"POST", "/r/index.json", -1, nil, true},
		{"PUT", "/r/-/x", 1, map[string]string{"repo": "r", "name": "x"}, true},
		{"GET", "/r/files/a/b/c", 2, map[string]string{"repo": "r", "rest": "a/b/c"}, true},
		{"GET", "/r/files", -1, nil, false},
		{"GET", "/r/other.json", -1, nil, false},
		{"GET", "/", -1, nil, false},
	}
	for _, c := range cases {
		r, params, ok := Match(routes, c.method, c.path)
		if c.route < 0 {
			if r != nil || ok != c.pathOK {
				t.Errorf("%s %s matched %+v (pathOK %v)", c.method, c.path, r, ok)
			}
			continue
		}
		if r != &routes[c.route] {
			t.Errorf("%s %s: got route %+v, want %d", c.method, c.path, r, c.route)
			continue
		}
		for k, v := range c.params {
			if params[k] != v {
				t.Errorf("%s %s: param %s = %q, want %q", c.method, c.path, k, params[k], v)
			}
		}
	}
}

func FuzzMatch(f *testing.F) {
	routes := []Route{
		{Method: http.MethodGet, Path: "/{repo}/index.json"},
		{Method: http.MethodGet, Path: "/{repo}/files/{rest...}"},
	}
	f.Add("GET", "/r/files/a/b")
	f.Add("HEAD", "//index.json")
	f.Fuzz(func(t *testing.T, method, path string) {
		r, params, _ := Match(routes, method, path)
		if r == nil {
			return
		}
		for k, v := range params {
			if k != "rest" && strings.Contains(v, "/") {
				t.Fatalf("single-segment param %s=%q holds a slash", k, v)
			}
		}
	})
}

func FuzzCheckSegment(f *testing.F) {
	for _, s := range []string{"a", "..", ".", "a/b", "a\\b", "\x00", "ok-1.0", "a\u202eb", "\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckSegment("x", s) != nil {
			return
		}
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || len(s) > MaxSegment ||
			strings.IndexFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) }) >= 0 {
			t.Fatalf("unsafe segment %q accepted", s)
		}
	})
}
