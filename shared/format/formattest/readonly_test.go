package formattest_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/format/formattest"
)

// answer is what a test compares of a response.
type answer struct {
	status int
	header http.Header
	body   string
}

func fetch(t *testing.T, e *formattest.Env, method, url string, hdr map[string]string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", e.Token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// npmTime is the one part of an answer that is not a function of the
// store: npm search says when it answered.
var npmTime = regexp.MustCompile(`"time":"[^"]*"`)

// TestReadOnlyNode: a node with no write environment at all (the shape of
// an edge) answers every read route of every format as a node that writes
// does: the same statuses, bytes and headers, Range and HEAD included,
// with absolute URLs pointing at itself. Every write route answers 405 in
// the format's own shape and changes nothing.
func TestReadOnlyNode(t *testing.T) {
	e := formattest.New(t)
	origin, edge := e.Node(all.Build).URL, e.ReadNode(all.Build).URL
	for _, r := range [][2]string{{"files", "generic"}, {"ctr", "docker"}, {"js", "npm"}, {"py", "pypi"}, {"m2", "maven"}} {
		e.Repo(r[0], r[1])
	}

	// Fill the store through the write routes.
	layer, cfg := []byte("layer bytes"), []byte(`{"config":{}}`)
	manifest := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
		sha256Digest(cfg), len(cfg), sha256Digest(layer), len(layer)))
	pyType, pyBody := pypiForm(t, "1.0a1", "sdist bytes")
	for _, w := range []struct {
		method, path, ct string
		body             []byte
		want             int
	}{
		{"PUT", "/generic/files/tool/1.0/tool.bin", "application/octet-stream", []byte("0123456789"), 201},
		{"PUT", "/maven2/m2/com/example/lib/1.0/lib-1.0.jar", "application/java-archive", []byte("jar bytes"), 201},
		{"PUT", "/maven2/m2/com/example/lib/1.0/lib-1.0.pom", "application/xml", []byte("<project/>"), 201},
		{"PUT", "/npm/js/demo-pkg", "application/json", npmPublish(t, "demo-pkg", "1.0.0", "latest"), 201},
		{"POST", "/pypi/py/", pyType, pyBody, 200},
		{"POST", "/v2/ctr/app/blobs/uploads/?digest=" + sha256Digest(layer), "application/octet-stream", layer, 201},
		{"POST", "/v2/ctr/app/blobs/uploads/?digest=" + sha256Digest(cfg), "application/octet-stream", cfg, 201},
		{"PUT", "/v2/ctr/app/manifests/v1", "application/vnd.oci.image.manifest.v1+json", manifest, 201},
	} {
		if got := fetch(t, e, w.method, origin+w.path, map[string]string{"Content-Type": w.ct}, w.body); got.status != w.want {
			t.Fatalf("%s %s: %d %s", w.method, w.path, got.status, got.body)
		}
	}

	tool, jar := "/generic/files/tool/1.0/tool.bin", "/maven2/m2/com/example/lib/1.0/lib-1.0.jar"
	mf, blob := "/v2/ctr/app/manifests/v1", "/v2/ctr/app/blobs/"+sha256Digest(layer)
	reads := []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", tool, nil},
		{"HEAD", tool, nil},
		{"GET", tool, map[string]string{"Range": "bytes=2-5"}},
		{"GET", tool, map[string]string{"If-None-Match": `"` + strings.TrimPrefix(sha256Digest([]byte("0123456789")), "sha256:") + `"`}},
		{"GET", "/generic/files/tool/1.0/missing.bin", nil},
		{"GET", jar, nil},
		{"GET", jar + ".sha1", nil},
		{"GET", "/maven2/m2/com/example/lib/maven-metadata.xml", nil},
		{"GET", "/maven/m2/com/example/lib/1.0/lib-1.0.pom", nil},
		{"GET", "/npm/js/demo-pkg", nil},
		{"GET", "/npm/js/demo-pkg", map[string]string{"Accept": "application/vnd.npm.install-v1+json"}},
		{"GET", "/npm/js/demo-pkg/latest", nil},
		{"GET", "/npm/js/demo-pkg/-/demo-pkg-1.0.0.tgz", nil},
		{"GET", "/npm/js/-/package/demo-pkg/dist-tags", nil},
		{"GET", "/npm/js/-/v1/search?text=demo", nil},
		{"GET", "/npm/js/-/whoami", nil},
		{"GET", "/npm/js/nope", nil},
		{"GET", "/pypi/py/simple/", nil},
		{"GET", "/pypi/py/simple/demo/", map[string]string{"Accept": "application/vnd.pypi.simple.v1+json"}},
		{"GET", "/pypi/py/simple/demo/", nil},
		{"GET", "/pypi/py/files/demo/1.0a1/demo-1.0a1.tar.gz", nil},
		{"GET", "/v2/", nil},
		{"GET", "/v2/_catalog", nil},
		{"GET", "/v2/ctr/app/tags/list", nil},
		{"GET", mf, map[string]string{"Accept": "application/vnd.oci.image.manifest.v1+json"}},
		{"HEAD", mf, nil},
		{"GET", blob, nil},
		{"GET", blob, map[string]string{"Range": "bytes=0-4"}},
		{"GET", "/v2/ctr/app/referrers/" + sha256Digest(manifest), nil},
		{"GET", "/v2/ctr/app/manifests/nope", nil},
		{"GET", "/v2/nosuch/app/tags/list", nil},
	}
	compared := []string{"Content-Type", "Content-Length", "Content-Range", "Content-Disposition", "ETag", "Docker-Content-Digest",
		"X-Checksum-Sha1", "X-Checksum-Sha256", "Location", "Link", "WWW-Authenticate"}
	for _, rd := range reads {
		want := fetch(t, e, rd.method, origin+rd.path, rd.hdr, nil)
		got := fetch(t, e, rd.method, edge+rd.path, rd.hdr, nil)
		if want.status >= 500 {
			t.Errorf("%s %s: the writing node answered %d %s", rd.method, rd.path, want.status, want.body)
		}
		wb := npmTime.ReplaceAllString(strings.ReplaceAll(want.body, origin, "BASE"), "")
		gb := npmTime.ReplaceAllString(strings.ReplaceAll(got.body, edge, "BASE"), "")
		if got.status != want.status || gb != wb {
			t.Errorf("%s %s: read-only node %d %q, writing node %d %q", rd.method, rd.path, got.status, gb, want.status, wb)
			continue
		}
		for _, h := range compared {
			wv, gv := strings.ReplaceAll(want.header.Get(h), origin, "BASE"), strings.ReplaceAll(got.header.Get(h), edge, "BASE")
			if h == "ETag" && strings.Contains(want.body, origin) {
				continue // a document's ETag covers its own absolute URLs
			}
			if wv != gv {
				t.Errorf("%s %s: header %s %q on the read-only node, %q on the writing node", rd.method, rd.path, h, gv, wv)
			}
		}
	}

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
		got := fetch(t, e, w.method, edge+w.path, map[string]string{"Content-Type": "application/json"}, []byte(`"1.0.0"`))
		if got.status != http.StatusMethodNotAllowed || !strings.Contains(got.body, w.shape) {
			t.Errorf("%s %s on the read-only node: %d %s, want 405 with %s", w.method, w.path, got.status, got.body, w.shape)
		}
	}
	if after := e.Store.LastApplied(); after != before {
		t.Fatalf("writes to the read-only node moved the log from %d to %d", before, after)
	}
}
