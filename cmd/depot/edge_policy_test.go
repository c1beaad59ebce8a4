package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEdgeEnforcesPoliciesAlone: a policy refusing downloads of what is
// not scanned (a generic file never is) reaches the edge, which refuses
// the download with the policy's name in the answer and in the status
// line, with the origin stopped too; the file it served before the
// policy was its to serve.
func TestEdgeEnforcesPoliciesAlone(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	o, e := es.o, es.e
	call(t, "PUT", o.url+"/generic/files/pkg/1.0/a.bin", es.basic, strings.NewReader("bytes"), 201)
	get := func() (int, string, string) {
		req, _ := http.NewRequest("GET", e.url+"/generic/files/pkg/1.0/a.bin", nil)
		req.Header.Set("Authorization", es.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Status, string(b)
	}
	waitFor(t, 20*time.Second, "the edge to serve the file", func() bool { code, _, _ := get(); return code == 200 })
	call(t, "POST", o.url+"/api/v1/security/policies", es.tok, strings.NewReader(
		`{"name":"scanned first","scope":{"repositories":["files"]},"rules":{"block_unscanned":true}}`), 201)
	var status, body string
	waitFor(t, 10*time.Second, "the edge to refuse the download", func() bool {
		var code int
		code, status, body = get()
		return code == 403
	})
	if !strings.Contains(body, `security policy \"scanned first\"`) || !strings.Contains(status, `scanned first`) {
		t.Errorf("the refusal: %s\n%s", status, body)
	}
	o.stop(t)
	if code, _, body := get(); code != 403 || !strings.Contains(body, "not scanned yet") {
		t.Errorf("with the origin stopped: %d %s", code, body)
	}
}
