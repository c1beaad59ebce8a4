package pypi

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// demoMetadata is a METADATA as setuptools writes it (2.1: the
// description is the body).
const demoMetadata = `Metadata-Version: 2.1
Name: Demo-Pkg
Version: 1.0
Summary: A demo package
Home-page: https://demo.example
License: BSD-3-Clause
Project-URL: Source Code, https://github.com/example/demo
Project-URL: Documentation, https://docs.demo.example
Keywords: demo,example
Classifier: License :: OSI Approved :: BSD License
Requires-Python: >=3.8
Requires-Dist: requests (>=2.25)
Requires-Dist: importlib-metadata>=4; python_version < "3.10"
Requires-Dist: pysocks!=1.5.7,>=1.5.6; extra == "socks"
Provides-Extra: socks

Demo
====

Does demos.
`

// legacyPKGInfo is a PKG-INFO of Metadata 1.1: the description folded
// into a header, the licence only as a classifier.
const legacyPKGInfo = `Metadata-Version: 1.1
Name: legacy
Version: 0.9
Summary: Old style
Description: First line
        second line
Classifier: License :: OSI Approved :: MIT License
Classifier: Programming Language :: Python
`

func TestInspect(t *testing.T) {
	// RECORD as pip writes it: the empty file's digest, and a line for
	// itself without one.
	record := "demo_pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n" +
		"\"demo_pkg-1.0.dist-info/RECORD\",,\n"
	wheel := formattest.Zip(t, map[string]string{"demo_pkg/__init__.py": "", "demo_pkg-1.0.dist-info/METADATA": demoMetadata,
		"demo_pkg-1.0.dist-info/RECORD": record})
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "demo-pkg/1.0/demo_pkg-1.0-py3-none-any.whl", File: bytes.NewReader(wheel), Size: int64(len(wheel))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "pypi", Name: "Demo-Pkg", Version: "1.0", Size: int64(len(wheel)), Summary: "A demo package",
		Description: "Demo\n====\n\nDoes demos.", Licenses: []string{"BSD-3-Clause"}, Homepage: "https://demo.example",
		Repository: "https://github.com/example/demo", Keywords: []string{"demo", "example"}, Dependencies: []format.Dependency{
			{Name: "requests", Constraint: "(>=2.25)", Kind: "runtime", Ecosystem: "pypi"},
			{Name: "importlib-metadata", Constraint: ">=4", Kind: "runtime", Condition: `python_version < "3.10"`, Ecosystem: "pypi"},
			{Name: "pysocks", Constraint: "!=1.5.7,>=1.5.6", Kind: "optional", Condition: `extra == "socks"`, Ecosystem: "pypi"}},
		Files: []format.FileEntry{{Path: "demo_pkg-1.0.dist-info/METADATA", Size: int64(len(demoMetadata))},
			{Path: "demo_pkg-1.0.dist-info/RECORD", Size: int64(len(record))},
			{Path: "demo_pkg/__init__.py", SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}, FileCount: 3}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("wheel:\ngot  %+v\nwant %+v", got, want)
	}
	sdist := formattest.Tgz(t, map[string]string{"legacy-0.9/PKG-INFO": legacyPKGInfo, "legacy-0.9/legacy.egg-info/PKG-INFO": legacyPKGInfo})
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "legacy/0.9/legacy-0.9.tar.gz", File: bytes.NewReader(sdist), Size: int64(len(sdist))})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "legacy" || got.Version != "0.9" || got.Description != "First line\nsecond line" || !reflect.DeepEqual(got.Licenses, []string{"MIT License"}) ||
		got.FileCount != 2 || got.Dependencies != nil {
		t.Fatalf("sdist: %+v", got)
	}
	zipSdist := formattest.Zip(t, map[string]string{"legacy-0.9/PKG-INFO": legacyPKGInfo})
	if got, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "legacy-0.9.zip", File: bytes.NewReader(zipSdist), Size: int64(len(zipSdist))}); err != nil || got.Summary != "Old style" {
		t.Fatalf("zip sdist: %+v, %v", got, err)
	}
	for what, s := range map[string]format.Stored{
		"a wheel of another version": {Path: "demo_pkg-2.0-py3-none-any.whl", File: bytes.NewReader(wheel)},
		"an sdist without PKG-INFO":  {Path: "legacy-0.9.tar.gz", File: bytes.NewReader(formattest.Tgz(t, map[string]string{"legacy-0.9/setup.py": ""}))},
		"not an sdist":               {Path: "legacy-0.9.tar.gz", File: bytes.NewReader([]byte("content"))},
		"a bad PKG-INFO":             {Path: "legacy-0.9.zip", File: bytes.NewReader(formattest.Zip(t, map[string]string{"legacy-0.9/PKG-INFO": "Name: legacy\n"}))},
		"another file":               {Path: "legacy-0.9.exe", File: bytes.NewReader(zipSdist)},
	} {
		s.Size = int64(s.File.(*bytes.Reader).Len())
		if _, err := (&Format{}).Inspect(t.Context(), s); err == nil {
			t.Errorf("%s is inspected", what)
		}
	}
}

func FuzzInspectPypi(f *testing.F) {
	f.Add(formattest.Zip(f, map[string]string{"demo_pkg-1.0.dist-info/METADATA": demoMetadata}), true)
	f.Add(formattest.Tgz(f, map[string]string{"demo_pkg-1.0/PKG-INFO": legacyPKGInfo}), false)
	f.Fuzz(func(t *testing.T, data []byte, wheel bool) {
		path := "demo_pkg-1.0.tar.gz"
		if wheel {
			path = "demo_pkg-1.0-py3-none-any.whl"
		}
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: path, File: bytes.NewReader(data), Size: int64(len(data))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzRequirement(f *testing.F) {
	f.Add(`pysocks!=1.5.7,>=1.5.6; extra == "socks"`)
	f.Add("name @ https://example.com/x.whl")
	f.Fuzz(func(t *testing.T, spec string) {
		d := requirement(spec)
		if len(d.Name)+len(d.Constraint)+len(d.Condition) > len(spec) {
			t.Fatalf("%q gave %+v", spec, d)
		}
	})
}
