package generic

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
)

func TestInspect(t *testing.T) {
	data := []byte("hello\n")
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "tools/1.2.0/tool-linux.tar.gz", File: bytes.NewReader(data), Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "generic", Name: "tools", Version: "1.2.0", Size: 6,
		Files: []format.FileEntry{{Path: "tool-linux.tar.gz", Size: 6}}, FileCount: 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, p := range []string{"tool.bin", "a/b", "a/../b/c", "x/../p/1.0/f", "a/b/c/d"} {
		if _, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: p, File: bytes.NewReader(nil)}); err == nil {
			t.Errorf("%s is inspected", p)
		}
	}
}

func FuzzInspectGeneric(f *testing.F) {
	f.Add("p/1.0/f.txt", int64(3))
	f.Add("p/../f", int64(0))
	f.Fuzz(func(t *testing.T, p string, size int64) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: p, File: bytes.NewReader(nil), Size: size})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
