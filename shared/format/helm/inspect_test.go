package helm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// chartYAML is a Chart.yaml as helm create and a maintainer leave it.
const chartYAML = `apiVersion: v2
name: web
description: A web server
type: application
version: 1.4.0
appVersion: "2.1"
home: https://example.com/web
sources:
  - https://github.com/example/web
keywords: [http, server]
annotations:
  artifacthub.io/license: Apache-2.0
dependencies:
  - name: redis
    version: ">=17.0.0 <18.0.0"
    repository: oci://registry.example.com/charts
    condition: redis.enabled
  - name: common
    version: 2.x.x
    repository: https://charts.example.com
    tags: [shared]
`

func TestInspect(t *testing.T) {
	tgz := formattest.Tgz(t, map[string]string{"web/Chart.yaml": chartYAML, "web/values.yaml": "replicas: 1\n"})
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "charts/web-1.4.0.tgz", File: bytes.NewReader(tgz), Size: int64(len(tgz))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "helm", Name: "web", Version: "1.4.0", Size: int64(len(tgz)), Summary: "A web server",
		Licenses: []string{"Apache-2.0"}, Homepage: "https://example.com/web", Repository: "https://github.com/example/web",
		Keywords: []string{"http", "server"}, Dependencies: []format.Dependency{
			{Name: "redis", Constraint: ">=17.0.0 <18.0.0", Kind: "runtime", Condition: "redis.enabled", Ecosystem: "helm"},
			{Name: "common", Constraint: "2.x.x", Kind: "runtime", Condition: "tags: shared", Ecosystem: "helm"}},
		FileCount: 2}
	// Tgz writes its files in map order.
	if len(got.Files) != 2 {
		t.Fatalf("files %+v", got.Files)
	}
	files := map[string]int64{}
	for _, f := range got.Files {
		files[f.Path] = f.Size
	}
	if !reflect.DeepEqual(files, map[string]int64{"web/Chart.yaml": int64(len(chartYAML)), "web/values.yaml": 12}) {
		t.Errorf("files %+v", got.Files)
	}
	got.Files = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// What an upload refuses, the inspector refuses.
	for what, archive := range map[string][]byte{
		"no Chart.yaml":   formattest.Tgz(t, map[string]string{"web/values.yaml": ""}),
		"two directories": formattest.Tgz(t, map[string]string{"web/Chart.yaml": chartYAML, "other/x": ""}),
		"a bad version":   formattest.Tgz(t, map[string]string{"web/Chart.yaml": "apiVersion: v2\nname: web\nversion: one\n"}),
		"not an archive":  []byte("Chart.yaml"),
		"a truncated one": tgz[:len(tgz)/2],
	} {
		if _, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "charts/web-1.4.0.tgz", File: bytes.NewReader(archive), Size: int64(len(archive))}); err == nil {
			t.Errorf("a chart with %s is inspected", what)
		}
	}
}

func FuzzInspectHelm(f *testing.F) {
	f.Add(formattest.Tgz(f, map[string]string{"web/Chart.yaml": chartYAML}))
	f.Add(formattest.Tgz(f, map[string]string{"d/Chart.yaml": "apiVersion: v2\nname: d\nversion: 1.0.0\ndependencies: [{name: x}, 3, {name: [y]}]\nannotations: {licenses: [a]}\n"}))
	f.Fuzz(func(t *testing.T, archive []byte) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "charts/x.tgz", File: bytes.NewReader(archive), Size: int64(len(archive))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
