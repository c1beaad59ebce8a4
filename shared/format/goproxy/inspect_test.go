package goproxy

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

const demoGoMod = `module example.com/demo/v2

go 1.22

require (
	golang.org/x/text v0.14.0
	github.com/google/uuid v1.6.0 // indirect
)

require example.com/other v1.0.0-20240101000000-abcdefabcdef
`

func TestInspect(t *testing.T) {
	zip := formattest.Zip(t, map[string]string{"example.com/demo/v2@v2.1.0/go.mod": demoGoMod,
		"example.com/demo/v2@v2.1.0/demo.go": "package demo\n"})
	deps := []format.Dependency{
		{Name: "golang.org/x/text", Constraint: "v0.14.0", Kind: "runtime", Ecosystem: "go"},
		{Name: "github.com/google/uuid", Constraint: "v1.6.0", Kind: "indirect", Ecosystem: "go"},
		{Name: "example.com/other", Constraint: "v1.0.0-20240101000000-abcdefabcdef", Kind: "runtime", Ecosystem: "go"}}
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "example.com/demo/v2/@v/v2.1.0.zip", File: bytes.NewReader(zip), Size: int64(len(zip))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "go", Name: "example.com/demo/v2", Version: "v2.1.0", Size: int64(len(zip)), Dependencies: deps,
		Files:     []format.FileEntry{{Path: "example.com/demo/v2@v2.1.0/demo.go", Size: 13}, {Path: "example.com/demo/v2@v2.1.0/go.mod", Size: int64(len(demoGoMod))}},
		FileCount: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "example.com/demo/v2/@v/v2.1.0.mod", File: bytes.NewReader([]byte(demoGoMod)), Size: int64(len(demoGoMod))})
	want = format.PackageInfo{Format: "go", Name: "example.com/demo/v2", Version: "v2.1.0", Size: int64(len(demoGoMod)), Dependencies: deps}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("go.mod: %+v, %v", got, err)
	}
	// A +incompatible version may lack a go.mod.
	old := formattest.Zip(t, map[string]string{"example.com/old@v3.0.0+incompatible/old.go": "package old\n"})
	if got, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "old.zip", File: bytes.NewReader(old), Size: int64(len(old))}); err != nil || got.Name != "example.com/old" {
		t.Fatalf("+incompatible: %+v, %v", got, err)
	}
	for what, s := range map[string]format.Stored{
		"no go.mod":         {Path: "a.zip", File: bytes.NewReader(formattest.Zip(t, map[string]string{"example.com/a@v1.0.0/a.go": ""}))},
		"another module":    {Path: "a.zip", File: bytes.NewReader(formattest.Zip(t, map[string]string{"example.com/a@v1.0.0/go.mod": "module example.com/b\n"}))},
		"no version":        {Path: "a.zip", File: bytes.NewReader(formattest.Zip(t, map[string]string{"example.com/a/go.mod": "module example.com/a\n"}))},
		"a v2 without /v2":  {Path: "a.zip", File: bytes.NewReader(formattest.Zip(t, map[string]string{"example.com/a@v2.0.0/go.mod": "module example.com/a\n"}))},
		"a .mod misplaced":  {Path: "example.com/demo/v2.mod", File: bytes.NewReader([]byte(demoGoMod))},
		"a .mod not go.mod": {Path: "example.com/demo/v2/@v/v2.1.0.mod", File: bytes.NewReader([]byte("module (\n"))},
		"another file":      {Path: "example.com/demo/v2/@v/v2.1.0.info", File: bytes.NewReader(zip)},
	} {
		s.Size = int64(s.File.(*bytes.Reader).Len())
		if _, err := (&Format{}).Inspect(t.Context(), s); err == nil {
			t.Errorf("a module with %s is inspected", what)
		}
	}
}

func FuzzInspectGo(f *testing.F) {
	f.Add(formattest.Zip(f, map[string]string{"example.com/demo/v2@v2.1.0/go.mod": demoGoMod}), true)
	f.Add([]byte(demoGoMod), false)
	f.Fuzz(func(t *testing.T, data []byte, zip bool) {
		path := "example.com/demo/v2/@v/v2.1.0.mod"
		if zip {
			path = "example.com/demo/v2/@v/v2.1.0.zip"
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
