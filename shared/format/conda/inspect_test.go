package conda

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

func TestInspect(t *testing.T) {
	// Made with tar and bzip2 -9, info/ first as conda packs it.
	tarBz2, err := os.ReadFile("testdata/tool-2.0-py_0.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	info, payload := formattest.CondaFiles("greet", "1.0.0", "linux-64", []string{"libgcc-ng >=12", "zlib"}, "hello\n")
	dotConda := formattest.DotConda(t, "greet-1.0.0-0", info, payload)
	for _, c := range []struct {
		path string
		data []byte
		want format.PackageInfo
	}{
		{"noarch/tool-2.0-py_0.tar.bz2", tarBz2, format.PackageInfo{Format: "conda", Name: "tool", Version: "2.0", Summary: "A small tool",
			Description: "Does one thing well.", Licenses: []string{"BSD-3-Clause"}, Homepage: "https://tool.example",
			Repository: "https://github.com/example/tool", Dependencies: []format.Dependency{
				{Name: "python", Constraint: ">=3.8,<3.13", Kind: "runtime", Ecosystem: "conda"},
				{Name: "requests", Constraint: "2.*", Kind: "runtime", Ecosystem: "conda"},
				{Name: "openssl", Constraint: ">=3.0.2 h1234_0", Kind: "runtime", Ecosystem: "conda"},
				{Name: "urllib3", Constraint: "<3", Kind: "constraint", Ecosystem: "conda"}},
			Files: []format.FileEntry{{Path: "bin/tool", Size: 20, SHA256: "bf664cf84f00f6ed76164c8457fdeaf8e4dee547226e9ffcf8274e2d2246fed9"}}, FileCount: 1}},
		{"linux-64/greet-1.0.0-0.conda", dotConda, format.PackageInfo{Format: "conda", Name: "greet", Version: "1.0.0", Licenses: []string{"MIT"},
			Dependencies: []format.Dependency{{Name: "libgcc-ng", Constraint: ">=12", Kind: "runtime", Ecosystem: "conda"},
				{Name: "zlib", Kind: "runtime", Ecosystem: "conda"}},
			Files: []format.FileEntry{{Path: "share/greet/hello.txt", Size: 6,
				SHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}}, FileCount: 1}},
	} {
		got, err := New(nil).Inspect(t.Context(), format.Stored{Path: c.path, File: bytes.NewReader(c.data), Size: int64(len(c.data))})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		c.want.Size = int64(len(c.data))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.path, got, c.want)
		}
	}
	noIndex := formattest.DotConda(t, "x-1-0", map[string]string{"info/files": "a\n"}, nil)
	badName, _ := formattest.CondaFiles("Greet", "1.0.0", "noarch", nil, "")
	for what, c := range map[string]format.Stored{
		"no index.json": {Path: "x-1-0.conda", File: bytes.NewReader(noIndex), Size: int64(len(noIndex))},
		"an upper case name": {Path: "x-1-0.conda", File: bytes.NewReader(formattest.DotConda(t, "x-1-0", badName, nil)),
			Size: int64(len(formattest.DotConda(t, "x-1-0", badName, nil)))},
		"another extension": {Path: "x-1-0.zip", File: bytes.NewReader(dotConda), Size: int64(len(dotConda))},
		"a truncated one":   {Path: "tool-2.0-py_0.tar.bz2", File: bytes.NewReader(tarBz2[:300]), Size: 300},
	} {
		if _, err := (&Format{}).Inspect(t.Context(), c); err == nil {
			t.Errorf("a package with %s is inspected", what)
		}
	}
}

func TestPackageFiles(t *testing.T) {
	// Past the metadata bounds, paths.json gives way to info/files.
	var many bytes.Buffer
	many.WriteString(`{"paths":[`)
	for i := range format.MaxMetadataNodes {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`{"_path":"f","size_in_bytes":1}`)
	}
	many.WriteString("]}")
	files, count, truncated := packageFiles(many.Bytes(), []byte("a\nb\n"))
	if !reflect.DeepEqual(files, []format.FileEntry{{Path: "a"}, {Path: "b"}}) || count != 2 || !truncated {
		t.Fatalf("%+v %d %v", files, count, truncated)
	}
}

func FuzzInspectConda(f *testing.F) {
	info, payload := formattest.CondaFiles("greet", "1.0.0", "noarch", []string{"python"}, "hi")
	f.Add(formattest.DotConda(f, "greet-1.0.0-0", info, payload), true)
	if tarBz2, err := os.ReadFile("testdata/tool-2.0-py_0.tar.bz2"); err == nil {
		f.Add(tarBz2, false)
	}
	f.Fuzz(func(t *testing.T, pkg []byte, isConda bool) {
		path := "noarch/x-1-0.tar.bz2"
		if isConda {
			path = "noarch/x-1-0.conda"
		}
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: path, File: bytes.NewReader(pkg), Size: int64(len(pkg))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
