package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules keeps the house rules of the layout: origin and edge
// never import each other, and shared, cluster and replication import
// neither.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "github.com/depot-registry/depot/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/depot-registry/depot/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		top := strings.SplitN(pkg, "/", 2)[0]
		var forbidden []string
		switch top {
		case "origin":
			forbidden = []string{"edge"}
		case "edge":
			forbidden = []string{"origin"}
		case "shared", "cluster", "replication":
			forbidden = []string{"origin", "edge"}
		}
		for _, dep := range fields[1:] {
			if !strings.HasPrefix(dep, mod) {
				continue
			}
			d := strings.TrimPrefix(dep, mod)
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s imports %s", pkg, d)
				}
			}
		}
	}
}
