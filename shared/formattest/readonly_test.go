package formattest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestReadOnlyNode: a node with no write environment at all (the shape of
// an edge) answers every read route of every format as a node that writes
// does: the same statuses, bytes and headers, Range and HEAD included,
// with absolute URLs pointing at itself. Every write route answers 405 in
// the format's own shape and changes nothing.
func TestReadOnlyNode(t *testing.T) {
	e := formattest.New(t)
	origin, edge := e.Node(all.Build).URL, e.ReadNode(all.Build).URL
	for _, r := range formattest.FixtureRepos {
		e.Repo(r[0], r[1])
	}
	f := formattest.NewFixture(t)
	auth := e.Basic()
	// Fill the store through the write routes.
	for _, w := range f.Writes {
		if got := formattest.Fetch(t, origin, w, auth); got.Status != w.Want {
			t.Fatalf("%s %s: %d %s", w.Method, w.Path, got.Status, got.Body)
		}
	}
	formattest.CompareReads(t, f.Reads, origin, edge, auth)
	tool, jar, mf, blob := f.Tool, f.Jar, f.Manifest, f.Blob

	// Writes: 405 in the format's own shape, and nothing committed.
	before := e.Store.LastApplied()
	for _, w := range []struct{ method, path, shape string }{
		{"PUT", tool, `"code":"METHOD_NOT_ALLOWED"`},
		{"DELETE", tool, `"code":"METHOD_NOT_ALLOWED"`},
		{"PUT", jar, "not served"},
		{"DELETE", jar, "not served"},
		{"PUT", "/npm/js/demo-pkg", `{"error":`},
		{"PUT", "/npm/js/-/package/demo-pkg/dist-tags/beta", `{"error":`},
		{"DELETE", "/npm/js/demo-pkg/-rev/1", `{"error":`},
		{"POST", "/pypi/py/", "not served"},
		{"POST", "/v2/ctr/app/blobs/uploads/", `"code":"UNSUPPORTED"`},
		{"PUT", "/v2/ctr/app/manifests/v2", `"code":"UNSUPPORTED"`},
		{"DELETE", mf, `"code":"UNSUPPORTED"`},
		{"DELETE", blob, `"code":"UNSUPPORTED"`},
	} {
		got := formattest.Fetch(t, edge, formattest.Call{Method: w.method, Path: w.path, Header: map[string]string{"Content-Type": "application/json"},
			Body: []byte(`"1.0.0"`)}, auth)
		if got.Status != http.StatusMethodNotAllowed || !strings.Contains(got.Body, w.shape) {
			t.Errorf("%s %s on the read-only node: %d %s, want 405 with %s", w.method, w.path, got.Status, got.Body, w.shape)
		}
	}
	if after := e.Store.LastApplied(); after != before {
		t.Fatalf("writes to the read-only node moved the log from %d to %d", before, after)
	}
}
