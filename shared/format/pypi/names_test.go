package pypi

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Demo_Pkg": "demo-pkg", "demo.pkg": "demo-pkg", "DEMO--pkg": "demo-pkg", "a._-b": "a-b",
		"Django": "django", "zope.interface": "zope-interface", "x": "x", "": "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "Demo_Pkg", "demo.app", "x1-2_3.4", strings.Repeat("a", maxNameLen)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "_a", "a b", "a/b", "../a", "ünï", "a\x00", strings.Repeat("a", maxNameLen+1)} {
		if CheckName(bad) == nil {
			t.Errorf("CheckName(%q) accepted", bad)
		}
	}
}

func TestParseFilename(t *testing.T) {
	good := map[string]Dist{
		"Demo_Pkg-1.0.0.tar.gz":                                {Kind: KindSdist, Name: "Demo_Pkg", Version: "1.0.0"},
		"demo-app-2.0.zip":                                     {Kind: KindSdist, Name: "demo-app", Version: "2.0"},
		"demo_pkg-1.0-py3-none-any.whl":                        {Kind: KindWheel, Name: "demo_pkg", Version: "1.0", Python: "py3", ABI: "none", Platform: "any"},
		"numpy-1.26.0-1-cp311-cp311-manylinux_2_17_x86_64.whl": {Kind: KindWheel, Name: "numpy", Version: "1.26.0", Build: "1", Python: "cp311", ABI: "cp311", Platform: "manylinux_2_17_x86_64"},
		"six-1.16.0-py2.py3-none-any.whl":                      {Kind: KindWheel, Name: "six", Version: "1.16.0", Python: "py2.py3", ABI: "none", Platform: "any"},
		"Demo.App-2.0.0-py3-none-any.whl":                      {Kind: KindWheel, Name: "Demo.App", Version: "2.0.0", Python: "py3", ABI: "none", Platform: "any"},
		"pkg-1.0rc1+local.7-py3-none-any.whl":                  {Kind: KindWheel, Name: "pkg", Version: "1.0rc1+local.7", Python: "py3", ABI: "none", Platform: "any"},
		"pkg-1!2.0.post1.dev3-py3-none-macosx_11_0_arm64.whl":  {Kind: KindWheel, Name: "pkg", Version: "1!2.0.post1.dev3", Python: "py3", ABI: "none", Platform: "macosx_11_0_arm64"},
		"pkg-1.0-2build-py3-none-win_amd64.whl":                {Kind: KindWheel, Name: "pkg", Version: "1.0", Build: "2build", Python: "py3", ABI: "none", Platform: "win_amd64"},
		"pkg-1.0-py3-none-manylinux1_x86_64.manylinux_2_5.whl": {Kind: KindWheel, Name: "pkg", Version: "1.0", Python: "py3", ABI: "none", Platform: "manylinux1_x86_64.manylinux_2_5"},
	}
	for in, want := range good {
		got, err := ParseFilename(in)
		if err != nil || got != want {
			t.Errorf("ParseFilename(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "pkg.tar.gz", "pkg-1.0.exe", "pkg-1.0.tar", "-1.0.tar.gz", "pkg-.tar.gz",
		"pkg-1.0-py3-none.whl", "pkg-1.0-x-py3-none-any.whl", "pkg-1.0-1-2-py3-none-any.whl", "pkg-1.0--none-any.whl",
		"../pkg-1.0.tar.gz", "a/pkg-1.0.tar.gz", "pkg-1.0-py3-none-any$.whl", "pkg-1.0\x00.tar.gz", strings.Repeat("a", 300) + "-1.0.tar.gz"} {
		if d, err := ParseFilename(bad); err == nil {
			t.Errorf("ParseFilename(%q) = %+v, want an error", bad, d)
		}
	}
}

func TestCheckFilename(t *testing.T) {
	ok := []struct{ name, version, file string }{
		{"Demo-Pkg", "1.0.0", "Demo_Pkg-1.0.0.tar.gz"},
		{"demo.app", "2.0", "demo_app-2.0-py3-none-any.whl"},
		{"legacy", "1.0-1", "legacy-1.0-1.tar.gz"}, // a "-" in a legacy version
		{"legacy", "1.0-1", "legacy-1.0_1-py3-none-any.whl"},
		{"a-b", "1.0", "a-b-1.0.zip"},
		{"Pkg", "1.0RC1", "pkg-1.0rc1.tar.gz"},
	}
	for _, c := range ok {
		if _, err := CheckFilename(c.name, c.version, c.file); err != nil {
			t.Errorf("CheckFilename(%q, %q, %q): %v", c.name, c.version, c.file, err)
		}
	}
	bad := []struct{ name, version, file string }{
		{"demo", "1.0", "other-1.0.tar.gz"},
		{"demo", "1.0", "demo-2.0.tar.gz"},
		{"demo", "1.0", "demo-1.0.1.tar.gz"},
		{"demo", "1.0", "demo-extra-1.0.tar.gz"},
		{"demo", "1.0", "demo-1.1-py3-none-any.whl"},
		{"demo", "1.0", "demox-1.0-py3-none-any.whl"},
	}
	for _, c := range bad {
		if _, err := CheckFilename(c.name, c.version, c.file); err == nil {
			t.Errorf("CheckFilename(%q, %q, %q) accepted", c.name, c.version, c.file)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Demo_Pkg", "a.-_b", "--", "ÄB", "a..b__c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Fatalf("Normalize is not idempotent on %q: %q", s, n)
		}
		if strings.ContainsAny(n, "_.ABCDEFGHIJKLMNOPQRSTUVWXYZ") || strings.Contains(n, "--") {
			t.Fatalf("Normalize(%q) = %q keeps upper case or separator runs", s, n)
		}
		if CheckName(s) == nil {
			if err := CheckName(n); err != nil {
				t.Fatalf("valid %q normalizes to invalid %q: %v", s, n, err)
			}
			if Normalize(strings.ToUpper(s)) != n {
				t.Fatalf("case changes the project of %q", s)
			}
		}
	})
}

func FuzzParseFilename(f *testing.F) {
	for _, s := range []string{"Demo_Pkg-1.0.0.tar.gz", "a-1-py3-none-any.whl", "a-1-1-py3-none-any.whl", "x.zip", "../a-1.tar.gz", "a-1-.whl"} {
		f.Add(s, "a", "1")
	}
	f.Fuzz(func(t *testing.T, file, name, version string) {
		d, err := ParseFilename(file)
		if err == nil {
			// Whatever is accepted is a safe path segment with a valid
			// name and version.
			if strings.ContainsAny(file, "/\\\x00") || file == ".." || CheckName(d.Name) != nil || CheckVersion(d.Version) != nil {
				t.Fatalf("ParseFilename(%q) accepted %+v", file, d)
			}
			if (d.Kind == KindWheel) != strings.HasSuffix(file, ".whl") {
				t.Fatalf("kind of %q: %s", file, d.Kind)
			}
		}
		if d, err := CheckFilename(name, version, file); err == nil {
			if Normalize(d.Name) != Normalize(name) || !sameVersion(d.Version, version) {
				t.Fatalf("CheckFilename(%q, %q, %q) accepted %+v", name, version, file, d)
			}
		}
	})
}
