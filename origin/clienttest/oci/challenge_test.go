package oci_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

var challengeParam = regexp.MustCompile(`(\w+)="([^"]*)"`)

// follow does what a registry client does: the request without a token,
// then, on the 401, a token for exactly the challenge's scope (from its
// realm, with the user's Basic credentials), and the request again with
// it. It returns the second answer and the scope asked for.
func follow(t *testing.T, e *origintest.Env, userBasic, method, path string, body []byte, header map[string]string) (*origintest.Response, string) {
	t.Helper()
	r := e.DoHeader(method, path, "", body, header)
	if r.Status != 401 {
		t.Fatalf("%s %s without a token: %d, want 401: %s", method, path, r.Status, r.Body)
	}
	ch := r.Header.Get("WWW-Authenticate")
	params := map[string]string{}
	for _, m := range challengeParam.FindAllStringSubmatch(ch, -1) {
		params[m[1]] = m[2]
	}
	if !strings.HasPrefix(ch, "Bearer ") || params["realm"] == "" || params["scope"] == "" {
		t.Fatalf("%s %s: challenge %q", method, path, ch)
	}
	realm, err := url.Parse(params["realm"])
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"service": {params["service"]}}
	for _, s := range strings.Fields(params["scope"]) {
		q.Add("scope", s)
	}
	var tok struct{ Token string }
	e.Do("GET", realm.Path+"?"+q.Encode(), userBasic, nil).Want(200).JSON(&tok)
	return e.DoHeader(method, path, "Bearer "+tok.Token, body, header), params["scope"]
}

// TestChallengesNameTheRoutesScope: every OCI route challenges with the
// scope it needs, so a client that follows the challenge can delete a
// manifest and a blob, check and cancel an upload and mount a blob from
// another repository (a DELETE was challenged with pull,push and an
// upload's status with pull: the tokens could never do them).
func TestChallengesNameTheRoutesScope(t *testing.T) {
	clienttest.Targets(t, func(t *testing.T) *origintest.Env { return start(t) }, func(t *testing.T, e *origintest.Env) {
		id := e.CreateRepo("priv", "docker", false)
		srcID := e.CreateRepo("src", "docker", false)
		alice := writer(e, "alice", id)
		e.Grant(srcID, alice.ID, false, "read")
		ab := basic(alice.Name, alice.Password)

		check := func(what string, r *origintest.Response, scope string, status int, wantScope string) {
			t.Helper()
			if scope != wantScope {
				t.Errorf("%s: challenged with scope %q, want %q", what, scope, wantScope)
			}
			if r.Status != status {
				t.Errorf("%s with a token for the challenge's scope: %d, want %d: %s", what, r.Status, status, r.Body)
			}
		}
		manifest := image(t, e, ab, "priv/app", "one", "")
		putManifest(e, ab, "priv/app", "v1", manifest).Want(201)
		r, scope := follow(t, e, ab, "GET", "/v2/priv/app/manifests/v1", nil, map[string]string{"Accept": ociManifest})
		check("GET manifest", r, scope, 200, "repository:priv/app:pull")

		// An upload: start, status, chunk, cancel.
		r, scope = follow(t, e, ab, "POST", "/v2/priv/app/blobs/uploads/", nil, nil)
		check("POST upload", r, scope, 202, "repository:priv/app:pull,push")
		loc := path(t, e, r.Header.Get("Location"))
		r, scope = follow(t, e, ab, "GET", loc, nil, nil)
		check("GET upload status", r, scope, 204, "repository:priv/app:pull,push")
		r, scope = follow(t, e, ab, "PATCH", loc, []byte("abc"), map[string]string{"Content-Type": "application/octet-stream"})
		check("PATCH upload", r, scope, 202, "repository:priv/app:pull,push")
		loc = path(t, e, r.Header.Get("Location"))
		r, scope = follow(t, e, ab, "DELETE", loc, nil, nil)
		check("DELETE upload", r, scope, 204, "repository:priv/app:pull,push")

		// A mount from another repository the user may read.
		blob := []byte("a layer to mount")
		d := pushBlob(t, e, basic("admin", origintest.AdminPassword), "src/base", blob)
		r, scope = follow(t, e, ab, "POST", "/v2/priv/app/blobs/uploads/?mount="+d+"&from=src/base", nil, nil)
		check("POST mount", r, scope, 201, "repository:priv/app:pull,push repository:src/base:pull")

		// A token the client holds for the target alone (docker caches
		// one per repository): the mount is challenged for the source's
		// pull, not quietly turned into a full upload.
		var tok struct{ Token string }
		e.Do("GET", "/v2/token?scope=repository:priv/app:pull,push", ab, nil).Want(200).JSON(&tok)
		d2 := pushBlob(t, e, basic("admin", origintest.AdminPassword), "src/base", []byte("another layer"))
		r = e.Do("POST", "/v2/priv/app/blobs/uploads/?mount="+d2+"&from=src/base", "Bearer "+tok.Token, nil)
		if ch := r.Header.Get("WWW-Authenticate"); r.Status != 401 || !strings.Contains(ch, `scope="repository:priv/app:pull,push repository:src/base:pull"`) {
			t.Errorf("a mount with a token lacking the source: %d %q", r.Status, ch)
		}
		// One whose holder may not read the source: an upload instead,
		// saying nothing of the source.
		bob := writer(e, "bob", id)
		var btok struct{ Token string }
		e.Do("GET", "/v2/token?scope=repository:priv/app:pull,push", basic(bob.Name, bob.Password), nil).Want(200).JSON(&btok)
		e.Do("POST", "/v2/priv/app/blobs/uploads/?mount="+d2+"&from=src/base", "Bearer "+btok.Token, nil).Want(202)

		// Deletes.
		digest := sha(manifest)
		r, scope = follow(t, e, ab, "DELETE", "/v2/priv/app/manifests/"+digest, nil, nil)
		check("DELETE manifest", r, scope, 202, "repository:priv/app:delete")
		r, scope = follow(t, e, ab, "DELETE", "/v2/priv/app/blobs/"+d, nil, nil)
		check("DELETE blob", r, scope, 202, "repository:priv/app:delete")
	})
}
