package helm

import (
	"bytes"
	"testing"

	"github.com/depot-registry/depot/shared/formattest"
)

func TestReadChart(t *testing.T) {
	good := formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.2.3\nkeywords: [a, b]\n", "demo/values.yaml": ""})
	c, err := readChart(t.Context(), bytes.NewReader(good), int64(len(good)))
	if err != nil || c["name"] != "demo" || c["version"] != "1.2.3" {
		t.Fatalf("readChart = %v, %v", c, err)
	}
	for what, archive := range map[string][]byte{
		"sub-chart only":  formattest.Tgz(t, map[string]string{"demo/charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n"}),
		"absolute path":   formattest.Tgz(t, map[string]string{"/demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.0.0\n"}),
		"numeric version": formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.0\n"}),
		"no api version":  formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "name: demo\nversion: 1.0.0\n"}),
		"not YAML":        formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "{{{"}),
		"empty":           {},
	} {
		if _, err := readChart(t.Context(), bytes.NewReader(archive), int64(len(archive))); err == nil {
			t.Errorf("a chart with %s was read", what)
		}
	}
}

func FuzzReadChart(f *testing.F) {
	f.Add(formattest.Tgz(f, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.2.3\n"}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, archive []byte) {
		c, err := readChart(t.Context(), bytes.NewReader(archive), int64(len(archive)))
		if err == nil && (c["name"] == "" || c["version"] == "") {
			t.Fatalf("read %v", c)
		}
	})
}
