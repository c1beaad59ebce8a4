package goproxy

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		path string
		want request
		ok   bool
	}{
		{"example.com/!demo/@v/list", request{module: "example.com/Demo", file: "list"}, true},
		{"example.com/!demo/@v/v1.0.0.info", request{module: "example.com/Demo", version: "v1.0.0", file: "info"}, true},
		{"example.com/demo/v2/@v/v2.1.0-!r!c1.zip", request{module: "example.com/demo/v2", version: "v2.1.0-RC1", file: "zip"}, true},
		{"example.com/demo/@v/v2.0.0+incompatible.mod", request{module: "example.com/demo", version: "v2.0.0+incompatible", file: "mod"}, true},
		{"example.com/demo/@latest", request{module: "example.com/demo", file: "latest"}, true},
		{"example.com/@v/list", request{module: "example.com", file: "list"}, true}, // a parent probe: answered 404 when empty
		{"localhost/@v/list", request{}, false},                // no dot: not a module path
		{"example.com/Demo/@v/list", request{}, false},         // upper case must be escaped
		{"example.com/demo/@v/v1.0.info", request{}, false},    // not canonical
		{"example.com/demo/@v/v1.0.0.tar", request{}, false},   // no such file
		{"example.com/demo/@v/latest.info", request{}, false},  // not a version
		{"sumdb/sum.golang.org/supported", request{}, false},   // the checksum database is not proxied
		{"example.com/../etc/@v/list", request{}, false},       // not a module path
		{"example.com/demo/@v/v1.0.0/x.zip", request{}, false}, // a version has no slash
		{"example.com/demo/@v/", request{}, false},
	} {
		got, ok := parse(c.path)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestLatest(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"v1.0.0", "v1.1.0-rc1", "v1.0.1"}, "v1.0.1"},
		{[]string{"v0.1.0-pre", "v0.2.0-pre"}, "v0.2.0-pre"},
		{[]string{"v1.0.0", "v2.0.0+incompatible"}, "v2.0.0+incompatible"},
	} {
		if got := latest(c.versions); got != c.want {
			t.Errorf("latest(%v) = %s, want %s", c.versions, got, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"example.com/!demo/@v/list", "example.com/demo/@v/v1.0.0.zip", "a.b/@latest", "x/@v/v1.0.0+incompatible.mod"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rq, ok := parse(p)
		if !ok {
			return
		}
		// What parses names a valid module, and a valid version for files.
		if rq.module == "" || rq.file == "" || (rq.file == "info" || rq.file == "mod" || rq.file == "zip") && rq.version == "" {
			t.Fatalf("parse(%q) = %+v", p, rq)
		}
	})
}
