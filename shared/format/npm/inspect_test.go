package npm

import (
	"archive/tar"
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// demoPackageJSON is a package.json as a maintainer writes it.
const demoPackageJSON = `{
  "name": "@acme/widget",
  "version": "2.1.0",
  "description": "Widgets for everyone",
  "license": "MIT",
  "homepage": "https://acme.example/widget",
  "repository": {"type": "git", "url": "git+https://github.com/acme/widget.git"},
  "keywords": ["widget", "ui"],
  "main": "index.js",
  "dependencies": {"lodash": "^4.17.21", "fsevents": "~2.3.2"},
  "devDependencies": {"jest": "29.x"},
  "peerDependencies": {"react": ">=17 <19", "react-dom": "*"},
  "peerDependenciesMeta": {"react-dom": {"optional": true}},
  "optionalDependencies": {"fsevents": "~2.3.2"}
}`

func TestInspect(t *testing.T) {
	tgz := makeTgz(t, entry{"package/package.json", tar.TypeReg, demoPackageJSON}, entry{"package/lib", tar.TypeDir, ""},
		entry{"package/index.js", tar.TypeReg, "module.exports = 1\n"})
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "@acme/widget/-/widget-2.1.0.tgz", File: bytes.NewReader(tgz), Size: int64(len(tgz))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "npm", Name: "@acme/widget", Version: "2.1.0", Size: int64(len(tgz)), Summary: "Widgets for everyone",
		Licenses: []string{"MIT"}, Homepage: "https://acme.example/widget", Repository: "git+https://github.com/acme/widget.git",
		Keywords: []string{"widget", "ui"}, Dependencies: []format.Dependency{
			{Name: "lodash", Constraint: "^4.17.21", Kind: "runtime", Ecosystem: "npm"},
			{Name: "jest", Constraint: "29.x", Kind: "dev", Ecosystem: "npm"},
			{Name: "react", Constraint: ">=17 <19", Kind: "peer", Ecosystem: "npm"},
			{Name: "react-dom", Constraint: "*", Kind: "peer", Optional: true, Ecosystem: "npm"},
			{Name: "fsevents", Constraint: "~2.3.2", Kind: "optional", Optional: true, Ecosystem: "npm"}},
		Files: []format.FileEntry{{Path: "package/package.json", Size: int64(len(demoPackageJSON))}, {Path: "package/index.js", Size: 19}}, FileCount: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// The tarball of formattest's publish, and older licence shapes.
	fixture := formattest.Tgz(t, map[string]string{"package/package.json": `{"name":"demo","version":"1.0.0","licenses":[{"type":"BSD"},{"type":"GPL"}],"repository":"github:a/b"}`})
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "demo/-/demo-1.0.0.tgz", File: bytes.NewReader(fixture), Size: int64(len(fixture))})
	if err != nil || got.Name != "demo" || !reflect.DeepEqual(got.Licenses, []string{"BSD", "GPL"}) || got.Repository != "github:a/b" {
		t.Fatalf("fixture: %+v, %v", got, err)
	}
	// What a publish refuses, the inspector refuses; and a package.json
	// that names no package.
	for what, data := range map[string][]byte{
		"a symlink":       makeTgz(t, entry{"package/package.json", tar.TypeReg, demoPackageJSON}, entry{"package/l", tar.TypeSymlink, ""}),
		"no package.json": makeTgz(t, entry{"package/index.js", tar.TypeReg, ""}),
		"trailing data":   append(bytes.Clone(tgz), tgz...),
		"no version":      makeTgz(t, entry{"package/package.json", tar.TypeReg, `{"name":"demo"}`}),
		"not JSON":        makeTgz(t, entry{"package/package.json", tar.TypeReg, `{"name":`}),
	} {
		if _, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "demo/-/demo-1.0.0.tgz", File: bytes.NewReader(data), Size: int64(len(data))}); err == nil {
			t.Errorf("a tarball with %s is inspected", what)
		}
	}
}

// TestManifestKeywords: the keywords a publish keeps for search are read
// by the same reader, a list of strings or nothing.
func TestManifestKeywords(t *testing.T) {
	for raw, want := range map[string][]string{
		`{"keywords":["a","b"]}`: {"a", "b"},
		`{"keywords":"a b"}`:     nil,
		`{"name":"x"}`:           nil,
	} {
		if got := keywords([]byte(raw)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q", raw, got)
		}
	}
}

func FuzzInspectNpm(f *testing.F) {
	f.Add(makeTgz(f, entry{"package/package.json", tar.TypeReg, demoPackageJSON}))
	f.Add(makeTgz(f, entry{"package/package.json", tar.TypeReg, `{"name":"a","version":"1","license":{"type":7},"dependencies":[1]}`}))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "a/-/a-1.tgz", File: bytes.NewReader(data), Size: int64(len(data))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
