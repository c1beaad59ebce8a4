package nuget

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// demoNuspec is a .nuspec as dotnet pack writes it.
const demoNuspec = `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd">
  <metadata>
    <id>Demo.Lib</id>
    <version>1.2.0.0-Beta</version>
    <authors>depot</authors>
    <license type="expression">Apache-2.0</license>
    <licenseUrl>https://licenses.nuget.org/Apache-2.0</licenseUrl>
    <projectUrl>https://demo.example</projectUrl>
    <description>A library for demos.</description>
    <tags>demo sample</tags>
    <repository type="git" url="https://github.com/example/demo" />
    <dependencies>
      <group targetFramework="net8.0">
        <dependency id="Newtonsoft.Json" version="[13.0.1, )" exclude="Build,Analyzers" />
      </group>
      <group targetFramework=".NETStandard2.0">
        <dependency id="System.Memory" version="4.5.5" />
      </group>
    </dependencies>
  </metadata>
</package>`

func TestInspect(t *testing.T) {
	nupkg := formattest.Zip(t, map[string]string{"Demo.Lib.nuspec": demoNuspec, "lib/net8.0/Demo.Lib.dll": "MZ",
		"[Content_Types].xml": "<Types/>"})
	want := format.PackageInfo{Format: "nuget", Name: "Demo.Lib", Version: "1.2.0-beta", Summary: "A library for demos.",
		Licenses: []string{"Apache-2.0"}, Homepage: "https://demo.example", Repository: "https://github.com/example/demo",
		Keywords: []string{"demo", "sample"}, Dependencies: []format.Dependency{
			{Name: "Newtonsoft.Json", Constraint: "[13.0.1, )", Kind: "runtime", Condition: "net8.0", Ecosystem: "nuget"},
			{Name: "System.Memory", Constraint: "4.5.5", Kind: "runtime", Condition: ".NETStandard2.0", Ecosystem: "nuget"}}}
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "demo.lib/1.2.0-beta/demo.lib.1.2.0-beta.nupkg", File: bytes.NewReader(nupkg), Size: int64(len(nupkg))})
	if err != nil {
		t.Fatal(err)
	}
	withFiles := want
	withFiles.Size = int64(len(nupkg))
	withFiles.Files = []format.FileEntry{{Path: "Demo.Lib.nuspec", Size: int64(len(demoNuspec))}, {Path: "[Content_Types].xml", Size: 8},
		{Path: "lib/net8.0/Demo.Lib.dll", Size: 2}}
	withFiles.FileCount = 3
	if !reflect.DeepEqual(got, withFiles) {
		t.Fatalf("got  %+v\nwant %+v", got, withFiles)
	}
	// The .nuspec stored beside it says the same.
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "demo.lib/1.2.0-beta/demo.lib.nuspec", File: bytes.NewReader([]byte(demoNuspec)), Size: int64(len(demoNuspec))})
	want.Size = int64(len(demoNuspec))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("nuspec: %+v, %v", got, err)
	}
	symbols := formattest.Zip(t, map[string]string{"a.nuspec": `<package><metadata><id>a</id><version>1.0.0</version><packageTypes><packageType name="SymbolsPackage"/></packageTypes></metadata></package>`})
	for what, s := range map[string]format.Stored{
		"no .nuspec":        {Path: "a.nupkg", File: bytes.NewReader(formattest.Zip(t, map[string]string{"lib/a.dll": ""}))},
		"a symbols package": {Path: "a.nupkg", File: bytes.NewReader(symbols)},
		"a bad version":     {Path: "a.nuspec", File: bytes.NewReader([]byte(`<package><metadata><id>a</id><version>one</version></metadata></package>`))},
		"not XML":           {Path: "a.nuspec", File: bytes.NewReader([]byte("<package"))},
		"another file":      {Path: "a.zip", File: bytes.NewReader(nupkg)},
	} {
		s.Size = int64(s.File.(*bytes.Reader).Len())
		if _, err := (&Format{}).Inspect(t.Context(), s); err == nil {
			t.Errorf("a package with %s is inspected", what)
		}
	}
}

func FuzzInspectNuget(f *testing.F) {
	f.Add(formattest.Zip(f, map[string]string{"Demo.Lib.nuspec": demoNuspec}), true)
	f.Add([]byte(demoNuspec), false)
	f.Fuzz(func(t *testing.T, data []byte, nupkg bool) {
		path := "a.nuspec"
		if nupkg {
			path = "a.nupkg"
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
