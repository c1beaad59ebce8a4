// Package plugintest builds the example plugins for tests and
// benchmarks, from their source.
package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// Example is the WebAssembly module of the example plugin name (a
// directory of shared/format/plugin/example), built once per process.
func Example(t testing.TB, name string) []byte {
	t.Helper()
	wasm, err := Build(filepath.Join("example", name))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// Hostile is the plugin of the host's tests that loops, allocates
// without end, panics or answers too much when asked (testdata/hostile).
func Hostile(t testing.TB) []byte {
	t.Helper()
	wasm, err := Build(filepath.Join("testdata", "hostile"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// Build builds the plugin whose source is at dir, relative to
// shared/format/plugin (see Example).
func Build(dir string) ([]byte, error) {
	name := filepath.Base(dir)
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[dir]; ok {
		return b, nil
	}
	_, here, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(here), "..", dir)
	tmp, err := os.MkdirTemp("", "plugin-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the example plugin %s: %v\n%s", name, err, b)
	}
	b, err := os.ReadFile(out)
	if err == nil {
		built[dir] = b
	}
	return b, err
}
