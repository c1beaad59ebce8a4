package format_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

func want(name string) func(string) bool { return func(n string) bool { return n == name } }

// TestReadTarRules: the rules every format gets from the shared reader.
func TestReadTarRules(t *testing.T) {
	ctx := context.Background()
	read := func(archive []byte, rules format.ArchiveRules) ([]format.Member, error) {
		rules.What = "a test archive"
		return format.ReadTar(ctx, bytes.NewReader(archive), int64(len(archive)), format.Gzip, rules)
	}
	good := formattest.Tgz(t, map[string]string{"pkg/meta.json": `{"a":1}`, "pkg/data": "bytes"})
	if ms, err := read(good, format.ArchiveRules{Want: want("pkg/meta.json")}); err != nil || string(format.First(ms)) != `{"a":1}` {
		t.Fatalf("good archive: %v %v", ms, err)
	}
	for name, c := range map[string]struct {
		archive []byte
		rules   format.ArchiveRules
	}{
		"traversal":      {formattest.Tgz(t, map[string]string{"../evil": "x"}), format.ArchiveRules{Want: want("x")}},
		"absolute":       {formattest.Tgz(t, map[string]string{"/etc/passwd": "x"}), format.ArchiveRules{Want: want("x")}},
		"backslash":      {formattest.Tgz(t, map[string]string{`a\..\b`: "x"}), format.ArchiveRules{Want: want("x")}},
		"member too big": {formattest.Tgz(t, map[string]string{"m": strings.Repeat("x", 2000)}), format.ArchiveRules{Want: want("m"), Limits: format.ArchiveLimits{Member: 1000}}},
		"too many":       {formattest.Tgz(t, map[string]string{"a": "", "b": "", "c": ""}), format.ArchiveRules{Want: want("x"), Limits: format.ArchiveLimits{Entries: 2}}},
		"not gzip":       {[]byte("plain text"), format.ArchiveRules{Want: want("x")}},
		"unpacks a lot":  {formattest.Tgz(t, map[string]string{"zeros": strings.Repeat("\x00", 8<<20)}), format.ArchiveRules{Want: want("x")}},
	} {
		if _, err := read(c.archive, c.rules); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	// A wanted member twice is refused, not read again.
	var twice bytes.Buffer
	zw := gzip.NewWriter(&twice)
	zw.Write(formattest.Tar(t, map[string]string{"m": "one"})[:512+512]) // a header and its block, no end marker
	zw.Write(formattest.Tar(t, map[string]string{"m": "two"}))
	zw.Close()
	if _, err := read(twice.Bytes(), format.ArchiveRules{Want: want("m"), All: true}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a member twice: %v", err)
	}
	// Exact: nothing may follow the archive.
	trailing := append(bytes.Clone(good), good...)
	if _, err := read(trailing, format.ArchiveRules{Want: want("pkg/meta.json"), All: true, Exact: true}); err == nil {
		t.Error("a second gzip member after the archive was accepted")
	}
}

// TestReadTarDone: a read with All ends where Done says, so what follows
// the metadata is never unpacked (here, more than the unpacking bound).
func TestReadTarDone(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(formattest.Tar(t, map[string]string{"info/a": "1"})[:1024])
	zw.Write(formattest.Tar(t, map[string]string{"info/b": "2"})[:1024])
	zw.Write(formattest.Tar(t, map[string]string{"zeros": strings.Repeat("\x00", 8<<20)}))
	zw.Close()
	rules := format.ArchiveRules{What: "a test archive", All: true, Want: func(n string) bool { return strings.HasPrefix(n, "info/") }}
	if _, err := format.ReadTar(context.Background(), bytes.NewReader(b.Bytes()), int64(b.Len()), format.Gzip, rules); err == nil {
		t.Fatal("read to the end, the zeros are not refused")
	}
	rules.Done = func(got []format.Member) bool { return len(got) == 2 }
	ms, err := format.ReadTar(context.Background(), bytes.NewReader(b.Bytes()), int64(b.Len()), format.Gzip, rules)
	if err != nil || len(ms) != 2 || string(ms[1].Data) != "2" {
		t.Fatalf("%v %v", ms, err)
	}
}

// TestReadZipRules: the same for zip, and its directory checked from the
// end record.
func TestReadZipRules(t *testing.T) {
	ctx := context.Background()
	read := func(archive []byte, rules format.ArchiveRules) ([]format.Member, error) {
		rules.What = "a test archive"
		return format.ReadZip(ctx, bytes.NewReader(archive), int64(len(archive)), rules)
	}
	good := formattest.Zip(t, map[string]string{"composer.json": `{}`, "src/a.php": ""})
	if ms, err := read(good, format.ArchiveRules{Want: want("composer.json")}); err != nil || string(format.First(ms)) != `{}` {
		t.Fatalf("good archive: %v %v", ms, err)
	}
	for name, c := range map[string]struct {
		archive []byte
		rules   format.ArchiveRules
	}{
		"traversal":      {formattest.Zip(t, map[string]string{"../evil": "x"}), format.ArchiveRules{Want: want("x")}},
		"drive":          {formattest.Zip(t, map[string]string{"c:/evil": "x"}), format.ArchiveRules{Want: want("x")}},
		"member too big": {formattest.Zip(t, map[string]string{"m": strings.Repeat("x", 2000)}), format.ArchiveRules{Want: want("m"), Limits: format.ArchiveLimits{Member: 1000}}},
		"too many":       {formattest.Zip(t, map[string]string{"a": "", "b": "", "c": ""}), format.ArchiveRules{Want: want("x"), Limits: format.ArchiveLimits{Entries: 2}}},
		"truncated":      {good[:len(good)-5], format.ArchiveRules{Want: want("x")}},
	} {
		if _, err := read(c.archive, c.rules); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// TestDecodeBounds: metadata is bounded before it is decoded.
func TestDecodeBounds(t *testing.T) {
	var v any
	if err := format.DecodeYAML([]byte("name: x\nlist: [a, b]\n"), &v, "t"); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{
		"long list":  "list:\n" + strings.Repeat("- a\n", format.MaxMetadataNodes),
		"flow list":  "list: [" + strings.Repeat("a,", format.MaxMetadataNodes) + "a]",
		"deep flow":  strings.Repeat("[", format.MaxMetadataDepth+1),
		"deep block": strings.Repeat(" ", 4*format.MaxMetadataDepth+1) + "a: b",
	} {
		if err := format.DecodeYAML([]byte(doc), &v, "t"); err == nil {
			t.Errorf("YAML %s decoded", name)
		}
	}
	if err := format.DecodeJSON([]byte(`{"a":[`+strings.Repeat("1,", format.MaxMetadataNodes)+`1]}`), &v, "t"); err == nil {
		t.Error("a JSON list past the bound decoded")
	}
	if got := format.Clip("héllo", 2); got != "h" {
		t.Errorf("Clip = %q", got)
	}
}

func FuzzReadTar(f *testing.F) {
	f.Add(formattest.Tgz(f, map[string]string{"pkg/meta.json": `{}`}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, archive []byte) {
		ms, err := format.ReadTar(context.Background(), bytes.NewReader(archive), int64(len(archive)), format.Gzip,
			format.ArchiveRules{What: "t", Want: want("pkg/meta.json"), All: true, Exact: true})
		if err == nil && len(ms) > 1 {
			t.Fatalf("%d copies of one member", len(ms))
		}
	})
}

func FuzzReadZip(f *testing.F) {
	f.Add(formattest.Zip(f, map[string]string{"composer.json": `{}`}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, archive []byte) {
		ms, err := format.ReadZip(context.Background(), bytes.NewReader(archive), int64(len(archive)),
			format.ArchiveRules{What: "t", Want: want("composer.json"), All: true, Limits: format.ArchiveLimits{Member: 1 << 10}})
		if err == nil && len(ms) > 1 {
			t.Fatalf("%d copies of one member", len(ms))
		}
	})
}
