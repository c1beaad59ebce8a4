package npm

import (
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	good := map[string]Name{
		"demo":                   {Base: "demo"},
		"demo-pkg.js_x":          {Base: "demo-pkg.js_x"},
		"@acme/widget":           {Scope: "acme", Base: "widget"},
		"@a-b.c/d":               {Scope: "a-b.c", Base: "d"},
		"-dash":                  {Base: "-dash"},
		"0":                      {Base: "0"},
		strings.Repeat("a", 214): {Base: strings.Repeat("a", 214)},
	}
	for in, want := range good {
		got, err := ParseName(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := []string{"", "Demo", ".hidden", "_under", "a b", "a/b", "@acme", "@acme/", "@/x", "@acme/x/y", "@Acme/x",
		"@acme/.x", "..", "a%2fb", "node_modules", "favicon.ico", "caf\u00e9", "x~y", "x!", strings.Repeat("a", 215), "a\x00"}
	for _, in := range bad {
		if n, err := ParseName(in); err == nil {
			t.Errorf("ParseName(%q) = %+v, want an error", in, n)
		}
	}
}

func TestNamePaths(t *testing.T) {
	n := Name{Scope: "acme", Base: "widget"}
	if got := n.Path("1.0.0"); got != "@acme/widget/-/widget-1.0.0.tgz" {
		t.Errorf("Path = %q", got)
	}
	if got := (Name{Base: "demo"}).Path("1.0.0-rc.1+b"); got != "demo/-/demo-1.0.0-rc.1+b.tgz" {
		t.Errorf("Path = %q", got)
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"demo", "@acme/widget", "@acme/", "a/b", "..", "@x/y/z", "A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseName(s)
		if err != nil {
			return
		}
		// What is accepted round-trips and is safe as path segments.
		if n.String() != s || len(s) > MaxNameLength {
			t.Fatalf("%q accepted as %+v", s, n)
		}
		for _, part := range []string{n.Scope, n.Base} {
			if part == "." || part == ".." || strings.ContainsAny(part, "/\\\x00%") {
				t.Fatalf("unsafe part %q accepted from %q", part, s)
			}
		}
		if strings.Count(n.Path("1.0.0"), "/") != strings.Count(s, "/")+2 {
			t.Fatalf("path of %q has extra segments", s)
		}
	})
}

func TestParseVersion(t *testing.T) {
	good := []string{"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92",
		"1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0-x-y-z.--", "18446744073709551615.0.0"}
	for _, s := range good {
		if _, ok := ParseVersion(s); !ok {
			t.Errorf("ParseVersion(%q) failed", s)
		}
	}
	bad := []string{"", "1", "1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b",
		"1.2.3.4", " 1.2.3", "1.2.3 ", "1.2.3-a_b", "18446744073709551616.0.0", "1.2.3/x", "-1.2.3"}
	for _, s := range bad {
		if v, ok := ParseVersion(s); ok {
			t.Errorf("ParseVersion(%q) = %+v, want failure", s, v)
		}
	}
}

func TestCompare(t *testing.T) {
	// semver.org's precedence example, in order.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0"}
	for i := range order {
		for j := range order {
			a, _ := ParseVersion(order[i])
			b, _ := ParseVersion(order[j])
			if got, want := Compare(a, b), cmpInt(i, j); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	a, _ := ParseVersion("1.0.0+a")
	b, _ := ParseVersion("1.0.0+b")
	if Compare(a, b) != 0 {
		t.Errorf("build metadata counted in precedence")
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "1.0.0-rc.1+b", "01.2.3", "1.2.3-01", "v1"} {
		f.Add(s, "1.0.0")
	}
	f.Fuzz(func(t *testing.T, s, other string) {
		v, ok := ParseVersion(s)
		if !ok {
			return
		}
		if strings.ContainsAny(s, "/\\ \x00") {
			t.Fatalf("unsafe version %q accepted", s)
		}
		if Compare(v, v) != 0 {
			t.Fatalf("%q does not equal itself", s)
		}
		if w, ok := ParseVersion(other); ok && Compare(v, w) != -Compare(w, v) {
			t.Fatalf("Compare(%q, %q) is not antisymmetric", s, other)
		}
	})
}

func TestCheckTag(t *testing.T) {
	for _, tag := range []string{"latest", "next", "beta", "v1-lts", "1.x", "2", "rc~1"} {
		if err := CheckTag(tag); err != nil {
			t.Errorf("CheckTag(%q) = %v", tag, err)
		}
	}
	for _, tag := range []string{"", "1.0.0", "v1.0.0", "2.0.0-rc.1", "a/b", "a b", "..%2f", ".", "..", strings.Repeat("x", 129), "tag\n"} {
		if err := CheckTag(tag); err == nil {
			t.Errorf("CheckTag(%q) accepted", tag)
		}
	}
}

func FuzzCheckTag(f *testing.F) {
	for _, s := range []string{"latest", "1.0.0", "v2.0.0", "a/b", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckTag(s) != nil {
			return
		}
		if _, ok := ParseVersion(s); ok {
			t.Fatalf("semver tag %q accepted", s)
		}
		if strings.ContainsAny(s, "/\\%\x00 ") || s == "" || s == "." || s == ".." {
			t.Fatalf("unsafe tag %q accepted", s)
		}
	})
}
