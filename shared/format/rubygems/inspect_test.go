package rubygems

import (
	"bytes"
	"compress/gzip"
	"reflect"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// gemFile is a .gem as gem build makes it: metadata.gz, data.tar.gz and
// checksums.yaml.gz in a plain tar.
func gemFile(t testing.TB, spec string, data map[string]string) []byte {
	t.Helper()
	var meta bytes.Buffer
	zw := gzip.NewWriter(&meta)
	zw.Write([]byte(spec))
	zw.Close()
	return formattest.Tar(t, map[string]string{"metadata.gz": meta.String(), "data.tar.gz": string(formattest.Tgz(t, data)),
		"checksums.yaml.gz": ""})
}

// fullSpec is gemspecYAML with what gem build writes besides.
var fullSpec = strings.Replace(gemspecYAML, "authors:\n", `description: A gem for demos.
homepage: https://demo.example
licenses:
- MIT
metadata:
  source_code_uri: https://github.com/example/demogem
  funding_uri: 7
authors:
`, 1)

func TestInspect(t *testing.T) {
	gem := gemFile(t, fullSpec, map[string]string{"lib/demogem.rb": "module Demogem; end\n"})
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "gems/demogem-1.1.0.gem", File: bytes.NewReader(gem), Size: int64(len(gem))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "rubygems", Name: "demogem", Version: "1.1.0", Size: int64(len(gem)), Summary: "a demo",
		Description: "A gem for demos.", Licenses: []string{"MIT"}, Homepage: "https://demo.example",
		Repository: "https://github.com/example/demogem", Dependencies: []format.Dependency{
			{Name: "basegem", Constraint: ">= 1.0, < 2", Kind: "runtime", Ecosystem: "rubygems"},
			{Name: "rake", Constraint: ">= 0", Kind: "dev", Ecosystem: "rubygems"}},
		Files: []format.FileEntry{{Path: "lib/demogem.rb", Size: 20}}, FileCount: 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// A platform gem is its version and platform, as its artifact is.
	native := gemFile(t, strings.Replace(gemspecYAML, "platform: ruby", "platform: x86_64-linux", 1), map[string]string{"lib/a.so": "x"})
	if got, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "x.gem", File: bytes.NewReader(native), Size: int64(len(native))}); err != nil || got.Version != "1.1.0-x86_64-linux" {
		t.Fatalf("native gem: %+v, %v", got, err)
	}
	badDeps := strings.Replace(gemspecYAML, "version: '2'", "version: '2; rm'", 1)
	var meta bytes.Buffer
	zw := gzip.NewWriter(&meta)
	zw.Write([]byte(gemspecYAML))
	zw.Close()
	brokenData := formattest.Tar(t, map[string]string{"metadata.gz": meta.String(), "data.tar.gz": "not gzip"})
	for what, g := range map[string][]byte{
		"no metadata.gz":           formattest.Tar(t, map[string]string{"data.tar.gz": string(formattest.Tgz(t, nil))}),
		"a bad runtime dependency": gemFile(t, badDeps, nil),
		"a bad name":               gemFile(t, strings.Replace(gemspecYAML, "name: demogem", "name: ../x", 1), nil),
		"a broken data.tar.gz":     brokenData,
		"an escaping file":         gemFile(t, gemspecYAML, map[string]string{"../../x.rb": ""}),
	} {
		if _, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "x.gem", File: bytes.NewReader(g), Size: int64(len(g))}); err == nil {
			t.Errorf("a gem with %s is inspected", what)
		}
	}
}

func FuzzInspectRubygems(f *testing.F) {
	f.Add(gemFile(f, fullSpec, map[string]string{"lib/a.rb": ""}))
	f.Add(gemFile(f, "name: x\nversion: {version: '1'}\nmetadata: [1]\ndescription: {a: b}\n", nil))
	f.Fuzz(func(t *testing.T, gem []byte) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "x.gem", File: bytes.NewReader(gem), Size: int64(len(gem))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
