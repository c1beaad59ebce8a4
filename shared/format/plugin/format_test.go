package plugin

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
)

// TestCheckManifest: what a module may declare.
func TestCheckManifest(t *testing.T) {
	good := func() abi.Manifest {
		return abi.Manifest{ID: "terraform", Name: "Terraform", Version: "1.0.0", Format: "terraform", Prefix: "/terraform",
			Routes: []abi.Route{
				{Method: "GET", Path: "/modules/v1/{repo}/{name}/versions", Action: "read"},
				{Method: "PUT", Path: "/modules/v1/{repo}/{path...}", Action: "write", Write: true},
				{Method: "GET", Path: "/ping"},
			},
			Roots: []string{"/.well-known/terraform.json"}}
	}
	if err := CheckManifest(good()); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(m *abi.Manifest){
		"an id with capitals":           func(m *abi.Manifest) { m.ID = "Terraform" },
		"a prefix of two segments":      func(m *abi.Manifest) { m.Prefix = "/a/b" },
		"a prefix with dots":            func(m *abi.Manifest) { m.Prefix = "/.." },
		"no name":                       func(m *abi.Manifest) { m.Name = "" },
		"no routes":                     func(m *abi.Manifest) { m.Routes = nil },
		"a GET that writes":             func(m *abi.Manifest) { m.Routes[0].Write = true },
		"a PUT that reads":              func(m *abi.Manifest) { m.Routes[1].Write = false },
		"a write that only reads":       func(m *abi.Manifest) { m.Routes[1].Action = "read" },
		"an action without {repo}":      func(m *abi.Manifest) { m.Routes[2].Action = "read" },
		"{repo} without an action":      func(m *abi.Manifest) { m.Routes[0].Action = "" },
		"a rest parameter not last":     func(m *abi.Manifest) { m.Routes[1].Path = "/{path...}/{repo}" },
		"a segment with a dot-dot":      func(m *abi.Manifest) { m.Routes[2].Path = "/a/../b" },
		"an unknown method":             func(m *abi.Manifest) { m.Routes[2].Method = "TRACE" },
		"an unknown action":             func(m *abi.Manifest) { m.Routes[0].Action = "admin" },
		"a root outside .well-known":    func(m *abi.Manifest) { m.Roots = []string{"/index.html"} },
		"a root that climbs":            func(m *abi.Manifest) { m.Roots = []string{"/.well-known/../api/v1/users"} },
		"too many routes":               func(m *abi.Manifest) { m.Routes = append(m.Routes, make([]abi.Route, 64)...) },
		"a path longer than 256 bytes":  func(m *abi.Manifest) { m.Routes[2].Path = "/" + strings.Repeat("a", 256) },
		"a setup snippet without title": func(m *abi.Manifest) { m.Setup = []abi.Snippet{{Text: "x"}} },
		"a setup snippet of 5 KiB":      func(m *abi.Manifest) { m.Setup = []abi.Snippet{{Title: "x", Text: strings.Repeat("x", 5<<10)}} },
		"a presigning write":            func(m *abi.Manifest) { m.Routes[1].Presign = true },
	} {
		m := good()
		mod(&m)
		if err := CheckManifest(m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
