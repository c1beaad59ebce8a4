package formattest

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The fixture every node that serves reads is held to: writes that fill
// one repository of each format, and requests of every format's read
// routes (HEAD, Range and conditional requests included, hits and
// misses), to answer identically on a node that writes and on one that
// only reads (an edge).

// Call is one request of the fixture.
type Call struct {
	Method, Path string
	Header       map[string]string
	Body         []byte
	Want         int // the status a write must get
}

// FixtureRepos are the repositories the fixture uses: name and format.
var FixtureRepos = [][2]string{{"files", "generic"}, {"ctr", "docker"}, {"js", "npm"}, {"py", "pypi"}, {"m2", "maven"}, {"gomods", "go"}, {"rust", "crates"}, {"charts", "helm"}, {"php", "composer"}, {"chan", "conda"}, {"gems", "rubygems"}, {"feed", "nuget"}}

// Fixture is the writes and the reads.
type Fixture struct {
	Writes, Reads []Call
	// Paths named by the reads, for tests that go on from there.
	Tool, Jar, Manifest, Blob string
}

// NewFixture builds the fixture's requests.
func NewFixture(t testing.TB) Fixture {
	t.Helper()
	layer, cfg := []byte("layer bytes"), []byte(`{"config":{}}`)
	manifest := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
		SHA256Digest(cfg), len(cfg), SHA256Digest(layer), len(layer)))
	pyType, pyBody := PyPIForm(t, "1.0a1", "sdist bytes")
	ct := func(v string) map[string]string { return map[string]string{"Content-Type": v} }
	f := Fixture{Tool: "/generic/files/tool/1.0/tool.bin", Jar: "/maven2/m2/com/example/lib/1.0/lib-1.0.jar",
		Manifest: "/v2/ctr/app/manifests/v1", Blob: "/v2/ctr/app/blobs/" + SHA256Digest(layer)}
	f.Writes = []Call{
		{"PUT", f.Tool, ct("application/octet-stream"), []byte("0123456789"), 201},
		{"PUT", f.Jar, ct("application/java-archive"), []byte("jar bytes"), 201},
		{"PUT", "/maven2/m2/com/example/lib/1.0/lib-1.0.pom", ct("application/xml"), []byte("<project/>"), 201},
		{"PUT", "/npm/js/demo-pkg", ct("application/json"), NPMPublish(t, "demo-pkg", "1.0.0", "latest"), 201},
		{"POST", "/pypi/py/", ct(pyType), pyBody, 200},
		{"POST", "/v2/ctr/app/blobs/uploads/?digest=" + SHA256Digest(layer), ct("application/octet-stream"), layer, 201},
		{"POST", "/v2/ctr/app/blobs/uploads/?digest=" + SHA256Digest(cfg), ct("application/octet-stream"), cfg, 201},
		{"PUT", f.Manifest, ct("application/vnd.oci.image.manifest.v1+json"), manifest, 201},
		{"PUT", "/go/gomods/upload", ct("application/zip"), Zip(t, map[string]string{
			"example.com/Mod@v1.0.0/go.mod": "module example.com/Mod\n", "example.com/Mod@v1.0.0/mod.go": "package mod\n"}), 201},
		{"PUT", "/crates/rust/api/v1/crates/new", nil, CratePublish(t, `{"name":"Demo_Lib","vers":"0.1.0","deps":[]}`,
			map[string]string{"Demo_Lib-0.1.0/Cargo.toml": "[package]\nname = \"Demo_Lib\"\n", "Demo_Lib-0.1.0/src/lib.rs": ""}), 200},
		{"PUT", "/helm/charts/charts/demo-0.1.0.tgz", ct("application/gzip"), Tgz(t, map[string]string{
			"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\ndescription: a demo\n", "demo/values.yaml": ""}), 201},
		{"PUT", "/composer/php?version=1.0.0", ct("application/zip"), Zip(t, map[string]string{
			"composer.json": `{"name":"acme/demo","description":"a demo"}`, "src/Demo.php": "<?php\n"}), 201},
		{"PUT", "/conda/chan/noarch/greet-1.0.0-0.conda", ct("application/octet-stream"), condaFixture(t), 201},
		{"POST", "/rubygems/gems/api/v1/gems", ct("application/octet-stream"), Gem(t, "demogem", "1.0.0"), 200},
		{"PUT", "/nuget/feed/", ct("application/octet-stream"), Zip(t, map[string]string{"Demo.Pkg.nuspec": `<package><metadata>` +
			`<id>Demo.Pkg</id><version>1.0.0</version><authors>depot</authors><description>a demo</description></metadata></package>`}), 201},
	}
	get := func(path string, hdr map[string]string) Call { return Call{Method: "GET", Path: path, Header: hdr} }
	f.Reads = []Call{
		get(f.Tool, nil),
		{Method: "HEAD", Path: f.Tool},
		get(f.Tool, map[string]string{"Range": "bytes=2-5"}),
		get(f.Tool, map[string]string{"Range": "bytes=20-30"}),
		get(f.Tool, map[string]string{"If-None-Match": `"` + strings.TrimPrefix(SHA256Digest([]byte("0123456789")), "sha256:") + `"`}),
		get(f.Tool, map[string]string{"If-Modified-Since": "Sat, 01 Jan 2050 00:00:00 GMT"}),
		get(f.Tool, map[string]string{"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}),
		get("/generic/files/tool/1.0/missing.bin", nil),
		get(f.Jar, nil),
		{Method: "HEAD", Path: f.Jar},
		get(f.Jar+".sha1", nil),
		get("/maven2/m2/com/example/lib/maven-metadata.xml", nil),
		get("/maven/m2/com/example/lib/1.0/lib-1.0.pom", nil),
		get("/maven2/m2/com/example/lib/2.0/lib-2.0.jar", nil),
		get("/npm/js/demo-pkg", nil),
		get("/npm/js/demo-pkg", map[string]string{"Accept": "application/vnd.npm.install-v1+json"}),
		get("/npm/js/demo-pkg/latest", nil),
		get("/npm/js/demo-pkg/-/demo-pkg-1.0.0.tgz", nil),
		{Method: "HEAD", Path: "/npm/js/demo-pkg/-/demo-pkg-1.0.0.tgz"},
		get("/npm/js/-/package/demo-pkg/dist-tags", nil),
		get("/npm/js/-/v1/search?text=demo", nil),
		get("/npm/js/-/whoami", nil),
		get("/npm/js/nope", nil),
		get("/pypi/py/simple/", nil),
		get("/pypi/py/simple/demo/", map[string]string{"Accept": "application/vnd.pypi.simple.v1+json"}),
		get("/pypi/py/simple/demo/", nil),
		get("/pypi/py/simple/nope/", nil),
		get("/pypi/py/files/demo/1.0a1/demo-1.0a1.tar.gz", nil),
		get("/v2/", nil),
		get("/v2/_catalog", nil),
		get("/v2/ctr/app/tags/list", nil),
		get(f.Manifest, map[string]string{"Accept": "application/vnd.oci.image.manifest.v1+json"}),
		{Method: "HEAD", Path: f.Manifest},
		get("/v2/ctr/app/manifests/"+SHA256Digest(manifest), nil),
		get(f.Blob, nil),
		{Method: "HEAD", Path: f.Blob},
		get(f.Blob, map[string]string{"Range": "bytes=0-4"}),
		get("/v2/ctr/app/referrers/"+SHA256Digest(manifest), nil),
		get("/v2/ctr/app/manifests/nope", nil),
		get("/v2/nosuch/app/tags/list", nil),
		get("/go/gomods/example.com/!mod/@v/list", nil),
		get("/go/gomods/example.com/!mod/@v/v1.0.0.info", nil),
		get("/go/gomods/example.com/!mod/@v/v1.0.0.mod", nil),
		get("/go/gomods/example.com/!mod/@v/v1.0.0.zip", nil),
		{Method: "HEAD", Path: "/go/gomods/example.com/!mod/@v/v1.0.0.zip"},
		get("/go/gomods/example.com/!mod/@latest", nil),
		get("/go/gomods/example.com/@v/list", nil),
		get("/go/gomods/example.com/!mod/@v/v2.0.0.info", nil),
		get("/go/gomods/sumdb/sum.golang.org/supported", nil),
		get("/crates/rust/index/config.json", nil),
		get("/crates/rust/index/de/mo/demo_lib", nil),
		get("/crates/rust/index/de/mo/nope", nil),
		get("/crates/rust/api/v1/crates/Demo_Lib/0.1.0/download", nil),
		get("/crates/rust/api/v1/crates/demo_lib/0.1.0/download", nil),
		get("/crates/rust/api/v1/crates/Demo_Lib/9.9.9/download", nil),
		get("/crates/rust/api/v1/crates/Demo_Lib/owners", nil),
		get("/crates/rust/api/v1/crates?q=demo", nil),
		get("/helm/charts/index.yaml", nil),
		get("/helm/charts/charts/demo-0.1.0.tgz", nil),
		{Method: "HEAD", Path: "/helm/charts/charts/demo-0.1.0.tgz"},
		get("/helm/charts/charts/demo-9.9.9.tgz", nil),
		get("/helm/charts/api/charts", nil),
		get("/helm/charts/api/charts/demo", nil),
		get("/helm/charts/api/charts/demo/0.1.0", nil),
		get("/helm/charts/api/charts/nope", nil),
		get("/composer/php/packages.json", nil),
		get("/composer/php/p2/acme/demo.json", nil),
		get("/composer/php/p2/acme/demo~dev.json", nil),
		get("/composer/php/p2/acme/nope.json", nil),
		get("/composer/php/files/acme/demo/1.0.0/acme-demo-1.0.0.zip", nil),
		get("/composer/php/list.json", nil),
		get("/composer/php/search.json?q=dem", nil),
		get("/conda/chan/channeldata.json", nil),
		get("/conda/chan/noarch/repodata.json", nil),
		get("/conda/chan/noarch/repodata.json.zst", nil),
		get("/conda/chan/linux-64/repodata.json", nil),
		get("/conda/chan/noarch/current_repodata.json", nil),
		get("/conda/chan/noarch/greet-1.0.0-0.conda", nil),
		get("/conda/chan/noarch/greet-9.0.0-0.conda", nil),
		{Method: "HEAD", Path: "/rubygems/gems/"},
		get("/rubygems/gems/versions", nil),
		get("/rubygems/gems/names", nil),
		get("/rubygems/gems/info/demogem", nil),
		get("/rubygems/gems/info/nope", nil),
		get("/rubygems/gems/gems/demogem-1.0.0.gem", nil),
		get("/rubygems/gems/specs.4.8.gz", nil),
		get("/rubygems/gems/latest_specs.4.8.gz", nil),
		get("/rubygems/gems/prerelease_specs.4.8.gz", nil),
		get("/rubygems/gems/quick/Marshal.4.8/demogem-1.0.0.gemspec.rz", nil),
		get("/nuget/feed/v3/index.json", nil),
		get("/nuget/feed/v3/package/demo.pkg/index.json", nil),
		get("/nuget/feed/v3/package/demo.pkg/1.0.0/demo.pkg.1.0.0.nupkg", nil),
		get("/nuget/feed/v3/package/demo.pkg/1.0.0/demo.pkg.nuspec", nil),
		get("/nuget/feed/v3/registration/demo.pkg/index.json", nil),
		get("/nuget/feed/v3/registration/demo.pkg/1.0.0.json", nil),
		get("/nuget/feed/v3/search?q=demo", nil),
		get("/nuget/feed/", nil),
		get("/nuget/feed/Packages(Id='Demo.Pkg',Version='1.0.0')", nil),
		get("/nuget/feed/FindPackagesById()?id='Demo.Pkg'", nil),
		get("/nuget/feed/$metadata", nil),
		get("/nuget/feed/v3/package/nope/index.json", nil),
	}
	return f
}

// Answer is what a comparison looks at of a response.
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Fetch sends c to base with the Authorization header auth ("" for none).
func Fetch(t testing.TB, base string, c Call, auth string) Answer {
	t.Helper()
	req, err := http.NewRequest(c.Method, base+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range c.Header {
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
	return Answer{resp.StatusCode, resp.Header, string(b)}
}

// npmTime is the one part of an answer that is not a function of the
// store: npm search says when it answered.
var npmTime = regexp.MustCompile(`"time":"[^"]*"`)

// compared are the headers a client acts on.
var compared = []string{"Content-Type", "Content-Length", "Content-Range", "Content-Disposition", "ETag", "Docker-Content-Digest",
	"X-Checksum-Sha1", "X-Checksum-Sha256", "Location", "Link", "WWW-Authenticate", "Accept-Ranges", "Cache-Control", "Last-Modified"}

// CompareReads sends each read to want (a node that writes) and to got
// (a node that only reads) and reports every difference in status, body
// or the headers clients act on, with each node's own base URL taken
// out of its answer. It also holds both nodes to what a shared cache in
// front of them needs (see checkVary).
func CompareReads(t testing.TB, reads []Call, want, got, auth string) {
	t.Helper()
	var both []answered
	for _, rd := range reads {
		w, g := Fetch(t, want, rd, auth), Fetch(t, got, rd, auth)
		if w.Status >= 500 {
			t.Errorf("%s %s: the writing node answered %d %s", rd.Method, rd.Path, w.Status, w.Body)
		}
		wb, gb := Normalize(w.Body, want), Normalize(g.Body, got)
		if g.Status != w.Status || gb != wb {
			t.Errorf("%s %s: read-only node %d %q, writing node %d %q", rd.Method, rd.Path, g.Status, gb, w.Status, wb)
			continue
		}
		for _, h := range compared {
			wv, gv := unbase(w.Header.Get(h), want), unbase(g.Header.Get(h), got)
			if h == "ETag" && (strings.Contains(w.Body, want) || npmTime.MatchString(w.Body)) {
				continue // a document's ETag covers its own bytes: its absolute URLs, npm search's time
			}
			if wv != gv {
				t.Errorf("%s %s: header %s %q on the read-only node, %q on the writing node", rd.Method, rd.Path, h, gv, wv)
			}
		}
		if wv, gv := Varies(w.Header), Varies(g.Header); !slices.Equal(wv, gv) {
			t.Errorf("%s %s: Vary %v on the read-only node, %v on the writing node", rd.Method, rd.Path, gv, wv)
		}
		both = append(both, answered{rd, [2]string{want, got}, [2]Answer{w, g}})
		checkRevalidation(t, rd, want, w, auth)
		checkRevalidation(t, rd, got, g, auth)
	}
	checkVary(t, both)
}

// checkRevalidation: a GET answered 200 carries an ETag (an index
// document too, not only a blob), and asked again with it in
// If-None-Match is answered 304 with no body; with another tag, 200 and
// the same document; and a plain GET after those is answered in full (a
// 304 is never remembered for requests that did not ask for it). A
// document holding the time it was answered (npm search) may have
// changed in between: then a 200 with a new tag.
func checkRevalidation(t testing.TB, rd Call, base string, a Answer, auth string) {
	t.Helper()
	if rd.Method != "GET" || a.Status != http.StatusOK || rd.Header["Range"] != "" || rd.Header["If-None-Match"] != "" ||
		rd.Header["If-Modified-Since"] != "" {
		return
	}
	etag := a.Header.Get("ETag")
	if etag == "" {
		t.Errorf("GET %s at %s: 200 with no ETag", rd.Path, base)
		return
	}
	ask := func(inm string) Answer {
		c := rd
		c.Header = map[string]string{}
		maps.Copy(c.Header, rd.Header)
		c.Header["If-None-Match"] = inm
		return Fetch(t, base, c, auth)
	}
	timed := npmTime.MatchString(a.Body)
	if r := ask(etag); !(r.Status == http.StatusNotModified && r.Body == "" && r.Header.Get("ETag") == etag) &&
		!(timed && r.Status == http.StatusOK && r.Header.Get("ETag") != etag) {
		t.Errorf("GET %s at %s with If-None-Match %s: %d, ETag %q, %d bytes; want 304, no body", rd.Path, base, etag, r.Status, r.Header.Get("ETag"), len(r.Body))
	}
	for _, r := range []Answer{ask(`"not-` + strings.Trim(etag, `"`) + `"`), Fetch(t, base, rd, auth)} {
		if r.Status != http.StatusOK || Normalize(r.Body, base) != Normalize(a.Body, base) {
			t.Errorf("GET %s at %s, after the conditional requests: %d %.100q, want 200 %.100q", rd.Path, base, r.Status, r.Body, a.Body)
		}
	}
}

// answered is a read and each node's answer to it.
type answered struct {
	Call
	bases   [2]string
	answers [2]Answer
}

// checkVary: an answer that names its node's base URL says it varies on
// Host (a shared cache must not give it to a client that used another
// name), and answers negotiated on Accept (a path answered differently
// to different Accept headers) say they vary on Accept.
func checkVary(t testing.TB, reads []answered) {
	t.Helper()
	for _, rd := range reads {
		for i, a := range rd.answers {
			if strings.Contains(a.Body, rd.bases[i]) && !slices.Contains(Varies(a.Header), "Host") {
				t.Errorf("%s %s: the answer of %s names its base URL, but its Vary %v does not name Host", rd.Method, rd.Path, rd.bases[i], Varies(a.Header))
			}
		}
	}
	for i, x := range reads {
		for _, y := range reads[i+1:] {
			if x.Method != "GET" || y.Method != "GET" || x.Path != y.Path || x.Header["Accept"] == y.Header["Accept"] ||
				x.answers[0].Status != 200 || y.answers[0].Status != 200 ||
				x.answers[0].Body == y.answers[0].Body && x.answers[0].Header.Get("Content-Type") == y.answers[0].Header.Get("Content-Type") {
				continue
			}
			for _, rd := range []answered{x, y} {
				for j, a := range rd.answers {
					if !slices.Contains(Varies(a.Header), "Accept") {
						t.Errorf("GET %s (Accept %q): the answer of %s is negotiated, but its Vary %v does not name Accept",
							rd.Path, rd.Header["Accept"], rd.bases[j], Varies(a.Header))
					}
				}
			}
		}
	}
}

// Varies are the header names an answer's Vary headers name, canonical,
// each once, sorted.
func Varies(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			if n = http.CanonicalHeaderKey(strings.TrimSpace(n)); n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Normalize is a body as two nodes' answers are compared: without the
// node's own base URL and host, and without npm search's answer time.
func Normalize(body, base string) string {
	return npmTime.ReplaceAllString(unbase(body, base), "")
}

// unbase takes a node's base URL, and its host (docker's service), out
// of s.
func unbase(s, base string) string {
	s = strings.ReplaceAll(s, base, "BASE")
	host := base[strings.Index(base, "://")+3:]
	return strings.ReplaceAll(s, host, "HOST")
}

// NPMPublish is the document npm PUTs to publish name@version under tag.
func NPMPublish(t Fataler, name, version, tag string) []byte {
	t.Helper()
	return NPMDocument(name, version, tag, Tgz(t, map[string]string{"package/package.json": fmt.Sprintf(`{"name":%q,"version":%q}`, name, version)}))
}

// NPMDocument is the document npm PUTs to publish name@version, whose
// tarball is data, under tag.
func NPMDocument(name, version, tag string, data []byte) []byte {
	s1, s512 := sha1.Sum(data), sha512.Sum512(data)
	dist := map[string]any{"shasum": hex.EncodeToString(s1[:]), "integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		"tarball": "http://elsewhere/x.tgz"}
	doc := map[string]any{"_id": name, "name": name, "dist-tags": map[string]string{tag: version},
		"versions": map[string]any{version: map[string]any{"name": name, "version": version, "_id": name + "@" + version, "dist": dist}},
		"_attachments": map[string]any{name + "-" + version + ".tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(data), "length": len(data)}}}
	raw, _ := json.Marshal(doc) // maps of strings: cannot fail
	return raw
}

// PyPIForm is the multipart form twine POSTs to upload an sdist of
// project "demo" at version, holding content.
func PyPIForm(t testing.TB, version, content string) (string, []byte) {
	t.Helper()
	s, m := sha256.Sum256([]byte(content)), md5.Sum([]byte(content))
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range [][2]string{{":action", "file_upload"}, {"protocol_version", "1"}, {"name", "demo"}, {"version", version},
		{"filetype", "sdist"}, {"pyversion", "source"}, {"metadata_version", "2.1"},
		{"sha256_digest", hex.EncodeToString(s[:])}, {"md5_digest", hex.EncodeToString(m[:])}} {
		_ = w.WriteField(f[0], f[1])
	}
	fw, err := w.CreateFormFile("content", "demo-1.0a1.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(content))
	_ = w.Close()
	return w.FormDataContentType(), b.Bytes()
}

// SHA256Digest is b's OCI digest.
func SHA256Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Zip is a zip archive of files (name -> content), written in name order:
// a go module zip when the names say so.
func Zip(t Fataler, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// CratePublish is the body cargo PUTs to publish: the JSON meta, then a
// .crate (a gzip'd tar) of files, each prefixed with its length.
func CratePublish(t Fataler, meta string, files map[string]string) []byte {
	t.Helper()
	crate := Tgz(t, files)
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(meta)))
	b.WriteString(meta)
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(crate)))
	b.Write(crate)
	return b.Bytes()
}

func condaFixture(t Fataler) []byte {
	info, payload := CondaFiles("greet", "1.0.0", "noarch", []string{}, "hello\n")
	return DotConda(t, "greet-1.0.0-0", info, payload)
}

// Gem is a .gem of name at version: a tar whose metadata.gz is the
// gemspec in YAML (the rest of a real gem is not read by the server).
func Gem(t Fataler, name, version string) []byte {
	t.Helper()
	var meta bytes.Buffer
	zw := gzip.NewWriter(&meta)
	fmt.Fprintf(zw, "--- !ruby/object:Gem::Specification\nname: %s\nversion: !ruby/object:Gem::Version\n  version: %s\nplatform: ruby\nsummary: a demo\n", name, version)
	_ = zw.Close()
	return Tar(t, map[string]string{"metadata.gz": meta.String(), "data.tar.gz": ""})
}
