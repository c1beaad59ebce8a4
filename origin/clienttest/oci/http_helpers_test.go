package oci_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// Helpers for the HTTP-level tests: error paths and protocol corners that
// the clients above never reach.

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// wantErr checks the native error body {"errors":[{code,message,detail}]}.
func wantErr(t *testing.T, r *origintest.Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var b struct {
		Errors []struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Detail  json.RawMessage `json:"detail"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil || len(b.Errors) != 1 || b.Errors[0].Code != code || b.Errors[0].Message == "" || len(b.Errors[0].Detail) == 0 {
		t.Fatalf("want %d %s, got body %s", status, code, r.Body)
	}
	if r.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Fatalf("error without Docker-Distribution-API-Version: %v", r.Header)
	}
}

// path turns an absolute Location into a path for e.Do.
func path(t *testing.T, e *origintest.Env, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(loc, e.URL+"/v2/") {
		t.Fatalf("Location %q is not an absolute URL of this registry", loc)
	}
	return u.RequestURI()
}

// pushBlob uploads b monolithically and returns its digest.
func pushBlob(t *testing.T, e *origintest.Env, auth, name string, b []byte) string {
	t.Helper()
	d := sha(b)
	r := e.Do("POST", "/v2/"+name+"/blobs/uploads/?digest="+d, auth, b).Want(201)
	if r.Header.Get("Docker-Content-Digest") != d || !strings.HasSuffix(r.Header.Get("Location"), "/v2/"+name+"/blobs/"+d) {
		t.Fatalf("monolithic upload answered %v", r.Header)
	}
	return d
}

// image pushes a config and a layer and returns an OCI manifest naming
// them (not pushed).
func image(t *testing.T, e *origintest.Env, auth, name, seed string, extra string) []byte {
	t.Helper()
	cfg := []byte(`{"architecture":"amd64","os":"linux","seed":"` + seed + `"}`)
	layer := []byte("layer of " + seed)
	cd, ld := pushBlob(t, e, auth, name, cfg), pushBlob(t, e, auth, name, layer)
	return []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]%s}`, cd, len(cfg), ld, len(layer), extra))
}

const ociManifest = "application/vnd.oci.image.manifest.v1+json"

func putManifest(e *origintest.Env, auth, name, ref string, body []byte) *origintest.Response {
	return e.DoHeader("PUT", "/v2/"+name+"/manifests/"+ref, auth, body, map[string]string{"Content-Type": ociManifest})
}
