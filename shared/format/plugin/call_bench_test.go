package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// listHost answers every list with the same files.
type listHost struct{ list []byte }

func (h listHost) Artifact(context.Context, string) ([]byte, error)         { return nil, nil }
func (h listHost) List(context.Context, string, int) ([]byte, error)        { return h.list, nil }
func (h listHost) Read(context.Context, string, int64, []byte) (int, error) { return 0, nil }

// BenchmarkCall: calls of the example Terraform plugin, without HTTP or
// a store: its manifest, its discovery document (the smallest call),
// an archive's route (three checks of the path, no host call), and a
// version list of 50 versions (a host list of 50 files, decoded and
// sorted); each as the registry runs it, and compiled without the
// deadline checks that stop a call at its time bound (what they cost).
func BenchmarkCall(b *testing.B) {
	for _, checked := range []bool{true, false} {
		name := "checked"
		if !checked {
			name = "unchecked"
		}
		b.Run(name, func(b *testing.B) { benchmarkCalls(b, checked) })
	}
}

func benchmarkCalls(b *testing.B, checked bool) {
	ctx := context.Background()
	e, err := newEngine(ctx, DefaultLimits, nil, checked)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Load(ctx, plugintest.Example(b, "terraform"))
	if err != nil {
		b.Fatal(err)
	}
	var arts []abi.Artifact
	for i := range 50 {
		v := fmt.Sprintf("1.%d.0", i)
		arts = append(arts, abi.Artifact{Path: "greet/aws/" + v + "/greet-aws-" + v + ".tar.gz", Package: "greet/aws", Version: v,
			Size: 65536, SHA256: "aa", Uploaded: "2026-01-01T00:00:00Z"})
	}
	list, _ := json.Marshal(arts)
	for _, c := range []struct{ name, req string }{
		{"manifest", `{"call":"manifest"}`},
		{"discovery", `{"call":"handle","route":-1}`},
		{"archive", `{"call":"handle","route":2,"method":"GET","params":{"repo":"infra","name":"greet","system":"aws","version":"1.0.0",` +
			`"file":"greet-aws-1.0.0.tar.gz"},"repo":{"name":"infra","format":"terraform"}}`},
		{"versions-50", `{"call":"handle","route":0,"method":"GET","params":{"repo":"infra","name":"greet","system":"aws"},` +
			`"repo":{"name":"infra","format":"terraform"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Call(ctx, listHost{list}, []byte(c.req)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
