// Package inventorytest builds what tests put in images: a real Go
// binary that names the modules it was built with.
package inventorytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GoBinary builds a small Go program requiring module at version (its
// code a stand-in vendored beside the program, so that nothing is
// downloaded) and returns the binary: its build information names the
// module at that version, as a real build's does.
func GoBinary(t testing.TB, module, version string) []byte {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "vendor", filepath.FromSlash(module))
	files := map[string]string{
		"go.mod":                               fmt.Sprintf("module example.com/scanned\n\ngo 1.21\n\nrequire %s %s\n", module, version),
		"main.go":                              fmt.Sprintf("package main\n\nimport dep %q\n\nfunc main() { println(dep.Name) }\n", module),
		filepath.Join("vendor", "modules.txt"): fmt.Sprintf("# %s %s\n## explicit\n%s\n", module, version, module),
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := module[strings.LastIndexByte(module, '/')+1:]
	src := fmt.Sprintf("package %s\n\nconst Name = \"a stand-in\"\n", strings.NewReplacer(".", "", "-", "").Replace(name))
	if err := os.WriteFile(filepath.Join(pkg, "dep.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-mod=vendor", "-o", "app", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a Go binary with %s %s: %v\n%s", module, version, err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "app"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
