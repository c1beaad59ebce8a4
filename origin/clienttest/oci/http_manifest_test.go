package oci_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestManifests covers manifests (pull, push, content discovery and
// content management categories): validation without side effects,
// stored bytes and media type, ?tag= pushes, tags pagination, referrers,
// deletes, and how untagged manifests show in the REST API.
func TestManifests(t *testing.T) {
	t.Parallel()
	e := start(t)
	repoID := e.CreateRepo("m", "docker", false)
	alice := writer(e, "alice", repoID)
	auth := basic(alice.Name, alice.Token)

	t.Run("invalid pushes leave nothing", func(t *testing.T) {
		e := e.For(t)
		good := image(t, e, auth, "m/v", "v", "")
		before, size := e.RepoCounters(repoID)
		missing := bytes.Replace(good, []byte(`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"`),
			[]byte(`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"`+sha([]byte("absent"))+`","size":1},{"mediaType":"x","digest":"`), 1)
		wantErr(t, putManifest(e, auth, "m/v", "1", missing), 400, "MANIFEST_BLOB_UNKNOWN")
		wantErr(t, putManifest(e, auth, "m/v", "1", []byte("{not json")), 400, "MANIFEST_INVALID")
		wantErr(t, putManifest(e, auth, "m/v", "1", []byte(`{"schemaVersion":1}`)), 400, "MANIFEST_INVALID")
		wrongSize := bytes.Replace(good, []byte(`"size":`), []byte(`"size":9`), 1)
		wantErr(t, putManifest(e, auth, "m/v", "1", wrongSize), 400, "MANIFEST_INVALID")
		mismatch := e.DoHeader("PUT", "/v2/m/v/manifests/1", auth, good, map[string]string{"Content-Type": "application/vnd.oci.image.index.v1+json"})
		wantErr(t, mismatch, 400, "MANIFEST_INVALID")
		wantErr(t, putManifest(e, auth, "m/v", sha([]byte("other")), good), 400, "DIGEST_INVALID")
		wantErr(t, putManifest(e, auth, "m/v", "bad!tag", good), 400, "MANIFEST_INVALID")
		big := append(good[:len(good)-1:len(good)-1], []byte(`,"annotations":{"pad":"`+strings.Repeat("x", 4<<20)+`"}}`)...)
		wantErr(t, putManifest(e, auth, "m/v", "1", big), 413, "MANIFEST_INVALID")
		wantErr(t, e.Do("GET", "/v2/m/v/manifests/1", auth, nil), 404, "MANIFEST_UNKNOWN")
		if n, s := e.RepoCounters(repoID); n != before || s != size {
			t.Fatalf("refused pushes changed the counters: %d/%d -> %d/%d", before, size, n, s)
		}
	})

	t.Run("stored bytes, HEAD and GET", func(t *testing.T) {
		e := e.For(t)
		// Odd spacing: the bytes, not a re-encoding, are what is served.
		m := append(image(t, e, auth, "m/raw", "raw", ""), ' ', '\n')
		d := sha(m)
		r := putManifest(e, auth, "m/raw", "1.0", m).Want(201)
		if r.Header.Get("Docker-Content-Digest") != d || r.Header.Get("Location") != e.URL+"/v2/m/raw/manifests/"+d {
			t.Fatalf("PUT answered %v", r.Header)
		}
		for _, ref := range []string{"1.0", d} {
			g := e.DoHeader("GET", "/v2/m/raw/manifests/"+ref, auth, nil, map[string]string{"Accept": "application/vnd.docker.distribution.manifest.v2+json"}).Want(200)
			if !bytes.Equal(g.Body, m) || g.Header.Get("Content-Type") != ociManifest || g.Header.Get("Docker-Content-Digest") != d {
				t.Fatalf("GET %s: %v %q", ref, g.Header, g.Body)
			}
			h := e.Do("HEAD", "/v2/m/raw/manifests/"+ref, auth, nil).Want(200)
			if h.Header.Get("Content-Length") != strconv.Itoa(len(m)) || h.Header.Get("Content-Type") != ociManifest || h.Header.Get("Docker-Content-Digest") != d {
				t.Fatalf("HEAD %s: %v", ref, h.Header)
			}
		}
		// Pushing the same bytes again is idempotent.
		putManifest(e, auth, "m/raw", "1.0", m).Want(201)
		putManifest(e, auth, "m/raw", d, m).Want(201)
		if tags := tagList(t, e, auth, "m/raw", ""); !slices.Equal(tags, []string{"1.0"}) {
			t.Fatalf("tags %v", tags)
		}
	})

	t.Run("by digest with tags, then untag", func(t *testing.T) {
		e := e.For(t)
		m := image(t, e, auth, "m/dig", "dig", "")
		d := sha(m)
		before, _ := e.RepoCounters(repoID)
		putManifest(e, auth, "m/dig", d, m).Want(201)
		if vs := versions(t, e, auth, repoID, "dig"); !slices.Equal(vs, []string{d}) {
			t.Fatalf("untagged manifest versions %v", vs)
		}
		r := putManifest(e, auth, "m/dig", d+"?tag=a&tag=b", m).Want(201)
		if got := r.Header.Values("OCI-Tag"); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("OCI-Tag %v", got)
		}
		if vs := versions(t, e, auth, repoID, "dig"); !slices.Equal(vs, []string{"a", "b"}) {
			t.Fatalf("tagged versions %v (the digest version must go)", vs)
		}
		if n, _ := e.RepoCounters(repoID); n != before+2 {
			t.Fatalf("artifact_count %d, want %d", n, before+2)
		}
		e.Do("DELETE", "/v2/m/dig/manifests/a", auth, nil).Want(202)
		wantErr(t, e.Do("GET", "/v2/m/dig/manifests/a", auth, nil), 404, "MANIFEST_UNKNOWN")
		e.Do("DELETE", "/v2/m/dig/manifests/b", auth, nil).Want(202)
		e.Do("GET", "/v2/m/dig/manifests/"+d, auth, nil).Want(200)
		if vs := versions(t, e, auth, repoID, "dig"); !slices.Equal(vs, []string{d}) {
			t.Fatalf("after untagging: versions %v", vs)
		}
		e.Do("DELETE", "/v2/m/dig/manifests/"+d, auth, nil).Want(202)
		wantErr(t, e.Do("GET", "/v2/m/dig/manifests/"+d, auth, nil), 404, "MANIFEST_UNKNOWN")
		wantErr(t, e.Do("DELETE", "/v2/m/dig/manifests/"+d, auth, nil), 404, "MANIFEST_UNKNOWN")
		if n, _ := e.RepoCounters(repoID); n != before {
			t.Fatalf("artifact_count %d after delete, want %d", n, before)
		}
	})

	t.Run("tag moves and delete by digest takes its tags", func(t *testing.T) {
		e := e.For(t)
		m1, m2 := image(t, e, auth, "m/mv", "one", ""), image(t, e, auth, "m/mv", "two", "")
		putManifest(e, auth, "m/mv", "latest", m1).Want(201)
		putManifest(e, auth, "m/mv", "stable", m1).Want(201)
		putManifest(e, auth, "m/mv", "latest", m2).Want(201)
		if g := e.Do("GET", "/v2/m/mv/manifests/latest", auth, nil).Want(200); !bytes.Equal(g.Body, m2) {
			t.Fatal("latest did not move")
		}
		e.Do("DELETE", "/v2/m/mv/manifests/"+sha(m1), auth, nil).Want(202)
		wantErr(t, e.Do("GET", "/v2/m/mv/manifests/stable", auth, nil), 404, "MANIFEST_UNKNOWN")
		if tags := tagList(t, e, auth, "m/mv", ""); !slices.Equal(tags, []string{"latest"}) {
			t.Fatalf("tags %v", tags)
		}
		// Moving the last tag off a manifest leaves it untagged, visible by digest.
		putManifest(e, auth, "m/mv", "latest", image(t, e, auth, "m/mv", "three", "")).Want(201)
		if vs := versions(t, e, auth, repoID, "mv"); !slices.Contains(vs, sha(m2)) || !slices.Contains(vs, "latest") || len(vs) != 2 {
			t.Fatalf("versions %v", vs)
		}
	})

	t.Run("index needs its manifests", func(t *testing.T) {
		e := e.For(t)
		child := image(t, e, auth, "m/idx", "child", "")
		index := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":%q,"digest":%q,"size":%d}]}`,
			ociManifest, sha(child), len(child)))
		put := func() *origintest.Response {
			return e.DoHeader("PUT", "/v2/m/idx/manifests/multi", auth, index, map[string]string{"Content-Type": "application/vnd.oci.image.index.v1+json"})
		}
		wantErr(t, put(), 400, "MANIFEST_BLOB_UNKNOWN")
		putManifest(e, auth, "m/idx", sha(child), child).Want(201)
		put().Want(201)
		if g := e.Do("GET", "/v2/m/idx/manifests/multi", auth, nil).Want(200); g.Header.Get("Content-Type") != "application/vnd.oci.image.index.v1+json" {
			t.Fatalf("index Content-Type %q", g.Header.Get("Content-Type"))
		}
	})

	t.Run("tags pagination", func(t *testing.T) {
		e := e.For(t)
		m := image(t, e, auth, "m/pg", "pg", "")
		for _, tag := range []string{"e", "b", "a", "d", "c"} {
			putManifest(e, auth, "m/pg", tag, m).Want(201)
		}
		if tags := tagList(t, e, auth, "m/pg", ""); strings.Join(tags, "") != "abcde" {
			t.Fatalf("all tags %v", tags)
		}
		r := e.Do("GET", "/v2/m/pg/tags/list?n=2", auth, nil).Want(200)
		if link := r.Header.Get("Link"); link != `<`+e.URL+`/v2/m/pg/tags/list?last=b&n=2>; rel="next"` {
			t.Fatalf("Link %q", link)
		}
		if tags := tagList(t, e, auth, "m/pg", "?n=2&last=b"); strings.Join(tags, "") != "cd" {
			t.Fatalf("page 2 %v", tags)
		}
		r = e.Do("GET", "/v2/m/pg/tags/list?n=2&last=d", auth, nil).Want(200)
		if tags := tagList(t, e, auth, "m/pg", "?n=2&last=d"); strings.Join(tags, "") != "e" || r.Header.Get("Link") != "" {
			t.Fatalf("last page %v, Link %q", tags, r.Header.Get("Link"))
		}
		r = e.Do("GET", "/v2/m/pg/tags/list?n=0", auth, nil).Want(200)
		if tags := tagList(t, e, auth, "m/pg", "?n=0"); len(tags) != 0 || r.Header.Get("Link") != "" {
			t.Fatalf("n=0: %v, Link %q", tags, r.Header.Get("Link"))
		}
		wantErr(t, e.Do("GET", "/v2/m/pg/tags/list?n=-1", auth, nil), 400, "PAGINATION_NUMBER_INVALID")
		wantErr(t, e.Do("GET", "/v2/m/none/tags/list", auth, nil), 404, "NAME_UNKNOWN")
	})

	t.Run("referrers", func(t *testing.T) {
		e := e.For(t)
		subject := image(t, e, auth, "m/ref", "subject", "")
		sd := sha(subject)
		// A referrer may arrive before its subject.
		emptyCfg := pushBlob(t, e, auth, "m/ref", []byte("{}"))
		sig := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"artifactType":"application/vnd.example.sig",`+
			`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":%q,"size":2},"layers":[],`+
			`"subject":{"mediaType":%q,"digest":%q,"size":%d},"annotations":{"k":"v"}}`, ociManifest, emptyCfg, ociManifest, sd, len(subject)))
		r := putManifest(e, auth, "m/ref", sha(sig), sig).Want(201)
		if r.Header.Get("OCI-Subject") != sd {
			t.Fatalf("OCI-Subject %q", r.Header.Get("OCI-Subject"))
		}
		putManifest(e, auth, "m/ref", "v1", subject).Want(201)
		g := e.Do("GET", "/v2/m/ref/referrers/"+sd, auth, nil).Want(200)
		body := string(g.Body)
		if g.Header.Get("Content-Type") != "application/vnd.oci.image.index.v1+json" || !strings.Contains(body, sha(sig)) ||
			!strings.Contains(body, `"artifactType":"application/vnd.example.sig"`) || !strings.Contains(body, `"annotations":{"k":"v"}`) {
			t.Fatalf("referrers %v %s", g.Header, body)
		}
		g = e.Do("GET", "/v2/m/ref/referrers/"+sd+"?artifactType=application/other", auth, nil).Want(200)
		if g.Header.Get("OCI-Filters-Applied") != "artifactType" || strings.Contains(string(g.Body), sha(sig)) {
			t.Fatalf("filtered referrers %v %s", g.Header, g.Body)
		}
		if g := e.Do("GET", "/v2/m/ref/referrers/"+sha([]byte("none")), auth, nil).Want(200); !strings.Contains(string(g.Body), `"manifests":[]`) {
			t.Fatalf("empty referrers %s", g.Body)
		}
		wantErr(t, e.Do("GET", "/v2/m/ref/referrers/sha256:zz", auth, nil), 400, "DIGEST_INVALID")
		e.Do("DELETE", "/v2/m/ref/manifests/"+sha(sig), auth, nil).Want(202)
		if g := e.Do("GET", "/v2/m/ref/referrers/"+sd, auth, nil).Want(200); strings.Contains(string(g.Body), sha(sig)) {
			t.Fatalf("deleted referrer still listed: %s", g.Body)
		}
	})
}

// tagList reads /tags/list with an optional query.
func tagList(t *testing.T, e *origintest.Env, auth, name, query string) []string {
	t.Helper()
	var l struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	e.Do("GET", "/v2/"+name+"/tags/list"+query, auth, nil).Want(200).JSON(&l)
	if l.Name != name || l.Tags == nil {
		t.Fatalf("tags list of %s: %+v", name, l)
	}
	return l.Tags
}

// versions lists a package's versions in the REST API, sorted.
func versions(t *testing.T, e *origintest.Env, auth, repoID, pkg string) []string {
	t.Helper()
	var vs struct {
		Versions []struct{ Version string } `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/"+pkg+"/versions?repository_id="+repoID, auth, nil).Want(200).JSON(&vs)
	var out []string
	for _, v := range vs.Versions {
		out = append(out, v.Version)
	}
	slices.Sort(out)
	return out
}
