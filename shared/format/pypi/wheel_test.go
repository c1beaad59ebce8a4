package pypi

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

const goodMetadata = "Metadata-Version: 2.1\nName: Demo-Pkg\nVersion: 1.0\nRequires-Python: >=3.8\nClassifier: A\n  folded\n\nBody: not a header\n"

var demoWheel = Dist{Kind: KindWheel, Name: "demo_pkg", Version: "1.0", Python: "py3", ABI: "none", Platform: "any"}

// zipBytes builds an archive of (name, content) pairs.
func zipBytes(t testing.TB, files ...[2]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, f := range files {
		fw, err := w.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWheelMetadata(t *testing.T) {
	z := zipBytes(t, [2]string{"demo_pkg/__init__.py", ""}, [2]string{"demo_pkg-1.0.dist-info/METADATA", goodMetadata},
		[2]string{"demo_pkg-1.0.dist-info/RECORD", ""}, [2]string{"other-2.0.dist-info/METADATA", "not ours"})
	data, cm, err := WheelMetadata(t.Context(), bytes.NewReader(z), int64(len(z)), demoWheel, DefaultWheelLimits)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != goodMetadata || cm != (CoreMetadata{"2.1", "Demo-Pkg", "1.0", ">=3.8"}) {
		t.Fatalf("got %q %+v", data, cm)
	}
}

func TestWheelMetadataRejects(t *testing.T) {
	meta := [2]string{"demo_pkg-1.0.dist-info/METADATA", goodMetadata}
	small := WheelLimits{MaxEntries: 3, MaxDirectory: 1 << 20, MaxMetadata: 200}
	many := [][2]string{meta}
	for i := 0; i < 5; i++ {
		many = append(many, [2]string{strings.Repeat("f", i+1), ""})
	}
	good := zipBytes(t, meta)
	if _, _, err := WheelMetadata(t.Context(), bytes.NewReader(good), int64(len(good)), demoWheel, small); err != nil {
		t.Fatalf("the unbroken wheel is refused: %v", err)
	}
	cases := map[string][]byte{
		"empty":            nil,
		"not a zip":        []byte(strings.Repeat("not a zip ", 10)),
		"truncated":        good[:len(good)-5],
		"no METADATA":      zipBytes(t, [2]string{"demo_pkg/__init__.py", ""}),
		"other project":    zipBytes(t, [2]string{"other-1.0.dist-info/METADATA", goodMetadata}),
		"other version":    zipBytes(t, [2]string{"demo_pkg-2.0.dist-info/METADATA", goodMetadata}),
		"nested METADATA":  zipBytes(t, [2]string{"x/demo_pkg-1.0.dist-info/METADATA", goodMetadata}),
		"two METADATA":     zipBytes(t, meta, [2]string{"Demo_Pkg-1.0.dist-info/METADATA", goodMetadata}),
		"duplicate entry":  zipBytes(t, meta, meta),
		"too many entries": zipBytes(t, many...),
		"huge METADATA":    zipBytes(t, [2]string{meta[0], goodMetadata + strings.Repeat("x", 200)}),
		"zip slip":         zipBytes(t, meta, [2]string{"../evil", ""}),
		"absolute":         zipBytes(t, meta, [2]string{"/etc/evil", ""}),
		"backslash":        zipBytes(t, meta, [2]string{"a\\..\\evil", ""}),
		"drive":            zipBytes(t, meta, [2]string{"c:/evil", ""}),
		"no headers":       zipBytes(t, [2]string{meta[0], "just text\n"}),
		"no version":       zipBytes(t, [2]string{meta[0], "Metadata-Version: 2.1\nName: demo_pkg\n"}),
		"bad name":         zipBytes(t, [2]string{meta[0], "Metadata-Version: 2.1\nName: demo pkg\nVersion: 1.0\n"}),
	}
	// A central directory that lies about the uncompressed size: the
	// reader stops at the limit or fails the size check.
	lying := append([]byte(nil), good...)
	if i := bytes.LastIndex(lying, []byte("PK\x01\x02")); i >= 0 {
		binary.LittleEndian.PutUint32(lying[i+24:], 10)
	}
	cases["lying size"] = lying
	// An end record claiming zip64.
	z64 := append([]byte(nil), good...)
	binary.LittleEndian.PutUint16(z64[len(z64)-22+10:], 0xFFFF)
	cases["zip64"] = z64
	for name, z := range cases {
		if data, cm, err := WheelMetadata(t.Context(), bytes.NewReader(z), int64(len(z)), demoWheel, small); err == nil {
			t.Errorf("%s: accepted %q %+v", name, data, cm)
		}
	}
}

func FuzzWheelMetadata(f *testing.F) {
	f.Add(zipBytes(f, [2]string{"demo_pkg-1.0.dist-info/METADATA", goodMetadata}))
	f.Add(zipBytes(f, [2]string{"demo_pkg-1.0.dist-info/METADATA", goodMetadata}, [2]string{"../x", ""}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	lim := WheelLimits{MaxEntries: 16, MaxDirectory: 4096, MaxMetadata: 1024}
	f.Fuzz(func(t *testing.T, z []byte) {
		data, cm, err := WheelMetadata(t.Context(), bytes.NewReader(z), int64(len(z)), demoWheel, lim)
		if err != nil {
			return
		}
		if int64(len(data)) > lim.MaxMetadata || CheckName(cm.Name) != nil || CheckVersion(cm.Version) != nil {
			t.Fatalf("accepted %d bytes of metadata, %+v", len(data), cm)
		}
	})
}

func FuzzParseCoreMetadata(f *testing.F) {
	f.Add([]byte(goodMetadata))
	f.Add([]byte("Name: a\n\tVersion: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cm, err := ParseCoreMetadata(data)
		if err == nil && (CheckName(cm.Name) != nil || CheckVersion(cm.Version) != nil || cm.MetadataVersion == "") {
			t.Fatalf("accepted %+v", cm)
		}
	})
}
