package crates

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"testing"
)

func TestIndexPath(t *testing.T) {
	for name, want := range map[string]string{"a": "1/a", "ab": "2/ab", "abc": "3/a/abc", "Demo_Lib": "de/mo/demo_lib", "serde": "se/rd/serde"} {
		if got := indexPath(name); got != want {
			t.Errorf("indexPath(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestNamesAndVersions(t *testing.T) {
	for n, ok := range map[string]bool{"demo": true, "demo_lib-2": true, "D": true, "": false, "1demo": false, "de mo": false, "../x": false, "é": false} {
		if validName(n) != ok {
			t.Errorf("validName(%q) != %v", n, ok)
		}
	}
	for v, ok := range map[string]bool{"1.0.0": true, "0.1.0-alpha.1": true, "1.0.7+build": true, "1.0": false, "v1.0.0": false, "1.0.0.0": false, "": false} {
		if validVersion(v) != ok {
			t.Errorf("validVersion(%q) != %v", v, ok)
		}
	}
}

// TestIndexLine: a publish's deps become the index's: version_req is
// req, a renamed dependency is named by its alias with the real crate in
// package, a null registry (crates.io) is named, this registry's is null;
// new-syntax features go to features2 with v 2.
func TestIndexLine(t *testing.T) {
	var m publishMeta
	const api = "https://depot.example.com/crates/rust"
	raw := `{"name":"app","vers":"1.0.0","deps":[
		{"name":"serde","version_req":"^1","kind":"normal","registry":null},
		{"name":"demo_lib","version_req":"^0.2","registry":"sparse+https://depot.example.com/crates/rust/index/","explicit_name_in_toml":"demo"}],
		"features":{"default":["std"],"std":[],"extra":["dep:demo"]}}`
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	line := indexLine(m, "abc", api)
	deps := line["deps"].([]map[string]any)
	if deps[0]["req"] != "^1" || deps[0]["registry"] != crateIOURL {
		t.Errorf("crates.io dep: %v", deps[0])
	}
	if deps[1]["name"] != "demo" || deps[1]["package"] != "demo_lib" || deps[1]["registry"] != nil {
		t.Errorf("renamed dep of this registry: %v", deps[1])
	}
	if line["v"] != 2 || line["features2"].(map[string][]string)["extra"] == nil || line["features"].(map[string][]string)["extra"] != nil {
		t.Errorf("features: %v / %v, v %v", line["features"], line["features2"], line["v"])
	}
}

func publishBody(meta []byte, crate []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(meta)))
	b.Write(meta)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(crate)))
	b.Write(crate)
	return b.Bytes()
}

func FuzzReadPublish(f *testing.F) {
	f.Add(publishBody([]byte(`{"name":"demo","vers":"1.0.0"}`), []byte("crate")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		_, crate, size, err := readPublish(bytes.NewReader(body), 1<<20)
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, crate)
		if n > size || size > 1<<20 {
			t.Fatalf("read %d of a crate said to be %d", n, size)
		}
	})
}
