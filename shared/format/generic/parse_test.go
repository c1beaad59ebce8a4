package generic

import (
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	good := map[string]Coords{
		"/r/pkg/1.0/f.txt":       {"r", "pkg", "1.0", "f.txt"},
		"r/p/v/file with spaces": {"r", "p", "v", "file with spaces"},
		"r/p/1.0+build/ünï.bin":  {"r", "p", "1.0+build", "ünï.bin"},
	}
	for in, want := range good {
		got, err := ParsePath(in)
		if err != nil || got != want {
			t.Errorf("ParsePath(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := []string{"", "/", "r/p/v", "r/p/v/f/extra", "r/../v/f", "r/p/./f", "r/p/v/..", "r//v/f",
		"r/p/v/a\\b", "r/p/v/a\x00b", "r/p/v/a\nb", "r/p/v/" + strings.Repeat("x", 256), "r/p/v/\xff"}
	for _, in := range bad {
		if c, err := ParsePath(in); err == nil {
			t.Errorf("ParsePath(%q) = %+v, want an error", in, c)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"r/p/v/f", "/r/p/1.0/a.tgz", "r/../v/f", "r/p/v/a\\b", "a/b/c/d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParsePath(s)
		if err != nil {
			return
		}
		// Whatever is accepted is four safe segments that rebuild the path.
		for _, part := range []string{c.Repo, c.Package, c.Version, c.File} {
			if part == "" || part == "." || part == ".." || strings.ContainsAny(part, "/\\\x00") {
				t.Fatalf("unsafe segment %q accepted from %q", part, s)
			}
		}
		if strings.TrimPrefix(s, "/") != c.Repo+"/"+c.Path() {
			t.Fatalf("%q does not round-trip: %+v", s, c)
		}
	})
}
