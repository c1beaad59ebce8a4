package oci_test

import (
	"strings"
	"testing"
)

// TestBlobsAndManifestsAreNotSniffed: pushed bytes are whatever the
// pusher chose (a "layer" can be an HTML page): blobs and manifests are
// served with nosniff and the sandbox CSP, like every other download.
func TestBlobsAndManifestsAreNotSniffed(t *testing.T) {
	t.Parallel()
	e := start(t)
	repoID := e.CreateRepo("safe", "docker", false)
	alice := writer(e, "alice", repoID)
	auth := basic(alice.Name, alice.Token)

	page := pushBlob(t, e, auth, "safe/img", []byte("<html><script>alert(document.cookie)</script></html>"))
	m := image(t, e, auth, "safe/img", "s", "")
	putManifest(e, auth, "safe/img", "1", m).Want(201)
	for _, p := range []string{"/v2/safe/img/blobs/" + page, "/v2/safe/img/manifests/1", "/v2/safe/img/manifests/" + sha(m)} {
		for _, method := range []string{"GET", "HEAD"} {
			h := e.Do(method, p, auth, nil).Want(200).Header
			if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("%s %s: no content safety headers: %v", method, p, h)
			}
		}
	}
}
