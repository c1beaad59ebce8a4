package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// testHost holds one repository's artifacts.
type testHost struct{ arts map[string]string }

func (h testHost) Artifact(_ context.Context, p string) ([]byte, error) {
	if a, ok := h.arts[p]; ok {
		return []byte(a), nil
	}
	return nil, nil
}

func (h testHost) List(context.Context, string, int) ([]byte, error) { return []byte("[]"), nil }

// TestHostile: a module serves its calls; one that loops forever is
// stopped at the call's time bound, one that allocates without end at
// the memory bound, one that panics fails its call, one that answers
// too much is refused, one that names a path outside its repository is
// refused by the host; after each, the module goes on serving (the
// broken instance dropped) and the process is unharmed.
func TestHostile(t *testing.T) {
	ctx := context.Background()
	// The time bound leaves the allocation room to reach the memory bound
	// first on a slow, busy machine (the race detector's).
	e, err := NewEngine(ctx, Limits{Memory: 64 << 20, Call: 3 * time.Second, Module: 32 << 20, Response: 1 << 20, Instances: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Load(ctx, plugintest.Hostile(t))
	if err != nil {
		t.Fatal(err)
	}
	host := testHost{arts: map[string]string{"pkg/1.0/a.bin": `{"path":"pkg/1.0/a.bin","size_bytes":3}`}}
	call := func(path, arg string) (map[string]any, error) {
		req, _ := json.Marshal(map[string]string{"path": path, "arg": arg})
		out, err := m.Call(ctx, host, req)
		if err != nil {
			return nil, err
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: answered %q", path, out)
		}
		return v, nil
	}
	works := func() {
		t.Helper()
		if v, err := call("/hello", ""); err != nil || v["echo"] != "/hello" {
			t.Fatalf("an ordinary call: %v %v", v, err)
		}
	}
	works()
	if v, err := call("/artifact", "pkg/1.0/a.bin"); err != nil || !strings.Contains(v["body"].(string), `"size_bytes":3`) {
		t.Fatalf("reading its repository: %v %v", v, err)
	}
	for _, escape := range []string{"../other/secret", "/etc/passwd", "pkg/../../other", "pkg/./x"} {
		if v, err := call("/artifact", escape); err != nil || v["code"] != float64(-1) {
			t.Errorf("reading %q: %v %v", escape, v, err)
		}
	}
	if v, err := call("/artifact", "pkg/2.0/none"); err != nil || v["code"] != float64(0) {
		t.Errorf("an artifact that is not there: %v %v", v, err)
	}

	start := time.Now()
	if _, err := call("/loop", ""); !errors.Is(err, ErrTimeout) {
		t.Errorf("an endless loop: %v", err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Errorf("the endless loop was stopped after %v", el)
	}
	works()
	if _, err := call("/alloc", ""); !errors.Is(err, ErrTrapped) {
		t.Errorf("an allocation without end: %v", err)
	}
	works()
	if _, err := call("/panic", ""); !errors.Is(err, ErrTrapped) {
		t.Errorf("a panic: %v", err)
	}
	works()
	if _, err := call("/huge", ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an answer of 20 MiB: %v", err)
	}
	works()

	// Calls at once share the instances; the memory stays bounded.
	var ms runtime.MemStats
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := call("/hello", ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > 1<<30 {
		t.Errorf("heap in use %d after the calls", ms.HeapInuse)
	}
}

// TestLoadRefuses: what is not a module of this interface is refused
// when loaded.
func TestLoadRefuses(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, DefaultLimits, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	for what, wasm := range map[string][]byte{
		"not wasm":   []byte("#!/bin/sh\necho hi\n"),
		"truncated":  []byte("\x00asm\x01\x00\x00\x00\x01"),
		"no exports": []byte("\x00asm\x01\x00\x00\x00"),
		"too large":  append([]byte("\x00asm\x01\x00\x00\x00"), make([]byte, 33<<20)...),
	} {
		if _, err := e.Load(ctx, wasm); err == nil {
			t.Errorf("%s: loaded", what)
		}
	}
}

func (h testHost) Read(context.Context, string, int64, []byte) (int, error) {
	return 0, errors.New("none")
}
