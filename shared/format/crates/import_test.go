package crates

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/depot-registry/depot/shared/formattest"
)

// TestPublishRequest: the publish body made from a .crate carries what
// its normalised Cargo.toml says, as cargo's own publish JSON would:
// requirements, kinds, a target's dependencies, a rename, features,
// default features off, registries (the one being moved here named as
// this registry), and the .crate itself after it.
func TestPublishRequest(t *testing.T) {
	toml := `[package]
edition = "2021"
name = "demo"
version = "1.2.3"
description = "a demo"
links = "z"
rust-version = "1.70"

[features]
default = ["std"]
std = []

[dependencies.serde]
version = "^1.0"
features = ["derive"]
optional = true
default-features = false

[dependencies.utils]
version = "0.3"
package = "real-utils"
registry-index = "sparse+https://af.example/artifactory/api/cargo/rust-local/index/"

[dependencies.elsewhere]
version = "1"
registry-index = "https://other.example/index"

[dev-dependencies.tempfile]
version = "3"

[target."cfg(unix)".dependencies.libc]
version = "0.2"
`
	crate := formattest.Tgz(t, map[string]string{"demo-1.2.3/Cargo.toml": toml, "demo-1.2.3/src/lib.rs": ""})
	body, n, err := PublishRequest(context.Background(), bytes.NewReader(crate), int64(len(crate)), func(index string) bool {
		return bytes.Contains([]byte(index), []byte("/api/cargo/rust-local/index"))
	})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(body)
	if int64(len(all)) != n {
		t.Fatalf("body of %d bytes, said %d", len(all), n)
	}
	m, rest, size, err := readPublish(bytes.NewReader(all), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(rest); size != int64(len(crate)) || !bytes.Equal(got, crate) {
		t.Fatalf("the .crate after the JSON: %d bytes", size)
	}
	if m.Name != "demo" || m.Vers != "1.2.3" || *m.Description != "a demo" || *m.Links != "z" || *m.RustVersion != "1.70" ||
		len(m.Features["default"]) != 1 {
		t.Fatalf("package fields: %+v", m)
	}
	deps := map[string]publishDep{}
	for _, d := range m.Deps {
		deps[d.Name] = d
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for name, want := range map[string]string{
		"serde":      `{"name":"serde","version_req":"^1.0","features":["derive"],"optional":true,"default_features":false,"target":null,"kind":"normal","registry":null,"explicit_name_in_toml":null}`,
		"real-utils": `{"name":"real-utils","version_req":"0.3","features":[],"optional":false,"default_features":true,"target":null,"kind":"normal","registry":"` + ThisRegistry + `","explicit_name_in_toml":"utils"}`,
		"elsewhere":  `{"name":"elsewhere","version_req":"1","features":[],"optional":false,"default_features":true,"target":null,"kind":"normal","registry":"https://other.example/index","explicit_name_in_toml":null}`,
		"tempfile":   `{"name":"tempfile","version_req":"3","features":[],"optional":false,"default_features":true,"target":null,"kind":"dev","registry":null,"explicit_name_in_toml":null}`,
		"libc":       `{"name":"libc","version_req":"0.2","features":[],"optional":false,"default_features":true,"target":"cfg(unix)","kind":"normal","registry":null,"explicit_name_in_toml":null}`,
	} {
		if got := js(deps[name]); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	if len(m.Deps) != 5 {
		t.Errorf("%d dependencies", len(m.Deps))
	}
	line := indexLine(m, "ck", "http://depot.example/crates/rust")
	for _, d := range line["deps"].([]map[string]any) {
		if d["name"] == "utils" && d["registry"] != nil {
			t.Errorf("a dependency moved here names registry %v in the index", d["registry"])
		}
	}
}
