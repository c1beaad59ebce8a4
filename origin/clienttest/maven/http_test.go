package maven_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// wantText checks a native error: the status and a plain-text body that
// says what went wrong.
func wantText(t *testing.T, r *origintest.Response, status int, says string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	if !strings.Contains(string(r.Body), says) {
		t.Errorf("body %q does not say %q", r.Body, says)
	}
}

const lib = "/maven2/libs/com/example/demo/"

// TestBadUploadsLeaveNothing sends what a broken or hostile client might:
// each gets a clear native error and the repository is unchanged.
func TestBadUploadsLeaveNothing(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("libs", "maven", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	auth := basic(alice.Name, alice.Token)

	jar := []byte("PK\x05\x06" + strings.Repeat("\x00", 18))
	pom := []byte("<project><groupId>com.example</groupId><artifactId>demo</artifactId><version>1.0</version></project>")
	r := e.Do("PUT", lib+"1.0/demo-1.0.jar", auth, jar).Want(201)
	if loc := r.Header.Get("Location"); loc != e.URL+lib+"1.0/demo-1.0.jar" {
		t.Errorf("Location %q", loc)
	}
	e.Do("PUT", lib+"1.0/demo-1.0.pom", auth, pom).Want(201)
	count, size := e.RepoCounters(repoID)
	if count != 2 || size != int64(len(jar)+len(pom)) {
		t.Fatalf("artifact_count %d size_bytes %d after two uploads of %d bytes", count, size, len(jar)+len(pom))
	}
	assertListed(t, e, repoID, "com.example:demo", "1.0", 2, alice.Name)

	wrongSHA1 := strings.Repeat("0", 40)
	cases := []struct {
		name, path string
		body       string
		header     map[string]string
		status     int
		says       string
	}{
		{"release redeploy", lib + "1.0/demo-1.0.jar", "other", nil, 409, "cannot be replaced"},
		{"forbidden character", lib + "1.0/demo:1.0.jar", "x", nil, 400, "forbidden character"},
		{"star", lib + "1.0/demo-1.0*.jar", "x", nil, 400, "forbidden character"},
		{"bidi control", lib + "1.0/demo-1.0%E2%80%AEraj.exe", "x", nil, 400, "U+202E"},
		{"zero-width space", "/maven2/libs/com/example/demo/1.0%E2%80%8B/demo-1.0%E2%80%8B.jar", "x", nil, 400, "U+200B"},
		{"file of another artifact", lib + "1.0/other-1.0.jar", "x", nil, 400, "does not follow"},
		{"file of another version", lib + "1.0/demo-1.1.jar", "x", nil, 400, "does not follow"},
		{"dot in a group directory", "/maven2/libs/com/exa.mple/demo/1.0/demo-1.0.jar", "x", nil, 400, "contains a dot"},
		{"no group", "/maven2/libs/demo/1.0/demo-1.0.jar", "x", nil, 400, "groupId"},
		{"bad snapshot timestamp", lib + "1.0-SNAPSHOT/demo-1.0-2026.1-1.jar", "x", nil, 400, "does not follow"},
		{"sidecar mismatch", lib + "1.0/demo-1.0.jar.sha1", wrongSHA1, nil, 400, "does not match"},
		{"sidecar not hex", lib + "1.0/demo-1.0.jar.md5", "not a checksum", nil, 400, "md5 checksum"},
		{"announced checksum wrong", lib + "1.1/demo-1.1.jar", "bytes", map[string]string{"X-Checksum-Sha1": wrongSHA1}, 400, "checksum"},
		{"metadata not XML", lib + "maven-metadata.xml", "<metadata", nil, 400, "malformed maven-metadata.xml"},
		{"metadata of another artifact", lib + "maven-metadata.xml",
			"<metadata><groupId>org.other</groupId><artifactId>demo</artifactId></metadata>", nil, 400, "not com.example:demo"},
		{"local metadata name", lib + "maven-metadata-central.xml", "<metadata/>", nil, 400, "only maven-metadata.xml"},
		{"encoded traversal", "/maven2/libs/com/example/demo/1.0/..%2f..%2f..%2fx-1.0.jar", "x", nil, 400, `".." is not allowed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.For(t).DoHeader("PUT", c.path, auth, c.body, c.header)
			wantText(t, r, c.status, c.says)
		})
	}
	if n, s := e.RepoCounters(repoID); n != count || s != size {
		t.Errorf("artifact_count/size_bytes %d/%d after refused uploads, want %d/%d", n, s, count, size)
	}

	// Sidecars that match, that precede their file, or that name the
	// metadata are accepted and never stored; so is the client's metadata.
	sums := map[string]string{}
	e.Do("GET", lib+"1.0/demo-1.0.jar.sha1", auth, nil).Want(200)
	for _, alg := range []string{"md5", "sha1", "sha256", "sha512"} {
		sums[alg] = string(e.Do("GET", lib+"1.0/demo-1.0.jar."+alg, auth, nil).Want(200).Body)
		e.Do("PUT", lib+"1.0/demo-1.0.jar."+alg, auth, strings.ToUpper(sums[alg])+"\n").Want(201)
	}
	if sums["sha1"] != sha1hex(jar) {
		t.Errorf("served sha1 %s, want %s", sums["sha1"], sha1hex(jar))
	}
	e.Do("PUT", lib+"2.0/demo-2.0.jar.sha1", auth, wrongSHA1).Want(201)
	e.Do("PUT", lib+"maven-metadata.xml", auth, `<?xml version="1.0"?><metadata><groupId>com.example</groupId>`+
		`<artifactId>demo</artifactId><versioning><versions><version>9.9</version></versions></versioning></metadata>`).Want(201)
	e.Do("PUT", lib+"maven-metadata.xml.sha1", auth, wrongSHA1).Want(201)
	if n, s := e.RepoCounters(repoID); n != count || s != size {
		t.Errorf("artifact_count/size_bytes %d/%d after sidecars and metadata, want %d/%d", n, s, count, size)
	}
	md := string(e.Do("GET", lib+"maven-metadata.xml", auth, nil).Want(200).Body)
	if strings.Contains(md, "9.9") || !strings.Contains(md, "<version>1.0</version>") {
		t.Errorf("served metadata is not generated from the stored files:\n%s", md)
	}

	// HEAD answers like GET, without a body.
	for _, p := range []string{"1.0/demo-1.0.jar", "1.0/demo-1.0.jar.sha1", "maven-metadata.xml", "maven-metadata.xml.md5"} {
		r := e.Do("HEAD", lib+p, auth, nil).Want(200)
		if r.Header.Get("Content-Length") == "" || len(r.Body) != 0 {
			t.Errorf("HEAD %s: Content-Length %q, body %d bytes", p, r.Header.Get("Content-Length"), len(r.Body))
		}
	}
	wantText(t, e.Do("HEAD", lib+"3.0/demo-3.0.jar", auth, nil), 404, "")
	wantText(t, e.Do("GET", lib+"3.0/demo-3.0.jar", auth, nil), 404, "not found")
	wantText(t, e.Do("GET", "/maven2/libs/com/example/nothing/maven-metadata.xml", auth, nil), 404, "not found")

	// Deleting needs the delete permission; metadata cannot be deleted.
	wantText(t, e.Do("DELETE", lib+"1.0/demo-1.0.pom", auth, nil), 403, "may not delete")
	wantText(t, e.Do("DELETE", lib+"maven-metadata.xml", e.Admin, nil), 405, "generated")
	e.Do("DELETE", lib+"1.0/demo-1.0.pom", e.Admin, nil).Want(204)
	if n, s := e.RepoCounters(repoID); n != count-1 || s != size-int64(len(pom)) {
		t.Errorf("after delete: %d/%d", n, s)
	}
}

// TestVersionPolicy: release repositories refuse SNAPSHOTs, snapshot
// repositories refuse releases.
func TestVersionPolicy(t *testing.T) {
	e := clienttest.Start(t)
	alice := clienttest.NewUser(e, "alice")
	auth := basic(alice.Name, alice.Password)
	for _, policy := range []string{"release", "snapshot", "mixed"} {
		var repo struct {
			ID string `json:"id"`
		}
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": policy + "s", "format": "maven",
			"settings": map[string]string{"version_policy": policy}}).Want(201).JSON(&repo)
		e.Grant(repo.ID, alice.ID, false, "write")
		base := "/maven2/" + policy + "s/com/example/demo/"
		rel := e.Do("PUT", base+"1.0/demo-1.0.jar", auth, "release")
		snap := e.Do("PUT", base+"1.0-SNAPSHOT/demo-1.0-20261121.235031-1.jar", auth, "snapshot")
		snapMeta := e.Do("PUT", base+"1.0-SNAPSHOT/maven-metadata.xml", auth, "<metadata/>")
		switch policy {
		case "release":
			rel.Want(201)
			wantText(t, snap, 400, "accepts only release versions (version_policy=release); 1.0-SNAPSHOT is a SNAPSHOT")
			wantText(t, snapMeta, 400, "version_policy=release")
		case "snapshot":
			wantText(t, rel, 400, "accepts only SNAPSHOT versions (version_policy=snapshot); 1.0 is a release")
			snap.Want(201)
			snapMeta.Want(201)
		default:
			rel.Want(201)
			snap.Want(201)
		}
		n, _ := e.RepoCounters(repo.ID)
		if want := map[string]int64{"release": 1, "snapshot": 1, "mixed": 2}[policy]; n != want {
			t.Errorf("%s: artifact_count %d, want %d", policy, n, want)
		}
	}
}

// TestAuthorization: anonymous callers are challenged, callers without
// the right are refused, and a repository of another format is not found.
func TestAuthorization(t *testing.T) {
	e := clienttest.Start(t)
	privID := e.CreateRepo("libs", "maven", false)
	pubID := e.CreateRepo("pub", "gradle", true)
	e.CreateRepo("npmjs", "npm", true)
	alice := clienttest.NewUser(e, "alice")
	bob := clienttest.NewUser(e, "bob")
	carol := clienttest.NewUser(e, "carol")
	e.Grant(privID, alice.ID, false, "write")
	e.Grant(pubID, alice.ID, false, "write")
	e.Grant(privID, bob.ID, false, "read")
	file := "com/example/demo/1.0/demo-1.0.jar"
	e.Do("PUT", "/maven2/libs/"+file, basic(alice.Name, alice.Password), "jar").Want(201)
	// Gradle repositories are served the same way, under both prefixes.
	e.Do("PUT", "/maven/pub/"+file, basic(alice.Name, alice.Token), "jar").Want(201)
	e.Do("GET", "/maven2/pub/"+file, "", nil).Want(200)
	e.Do("GET", "/maven/pub/com/example/demo/maven-metadata.xml", "", nil).Want(200)

	for _, method := range []string{"GET", "HEAD", "PUT"} {
		r := e.Do(method, "/maven2/libs/"+file, "", nil)
		if r.Status != 401 || r.Header.Get("WWW-Authenticate") != `Basic realm="Depot"` {
			t.Errorf("anonymous %s: %d, WWW-Authenticate %q", method, r.Status, r.Header.Get("WWW-Authenticate"))
		}
	}
	wantText(t, e.Do("GET", "/maven2/libs/com/example/demo/maven-metadata.xml", "", nil), 401, "authentication required")
	r := e.Do("GET", "/maven2/libs/"+file, basic(alice.Name, "wrong-password"), nil)
	wantText(t, r, 401, "invalid credentials")
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Error("bad credentials: no challenge")
	}

	e.Do("GET", "/maven2/libs/"+file, basic(bob.Name, bob.Token), nil).Want(200)
	wantText(t, e.Do("PUT", "/maven2/libs/com/example/demo/1.1/demo-1.1.jar", basic(bob.Name, bob.Password), "jar"), 403, "may not write")
	// carol cannot read libs: to her it looks like a repository that does not exist.
	wantText(t, e.Do("GET", "/maven2/libs/"+file, basic(carol.Name, carol.Password), nil), 404, "repository libs not found")
	// A repository of another format alice may read: not here, and where it is.
	wantText(t, e.Do("GET", "/maven2/npmjs/"+file, basic(alice.Name, alice.Password), nil), 404, "repository npmjs is a npm repository, not maven or gradle: it is served at ")
	wantText(t, e.Do("GET", "/maven2/nosuch/"+file, basic(alice.Name, alice.Password), nil), 404, "repository nosuch not found")
	if n, _ := e.RepoCounters(privID); n != 1 {
		t.Errorf("artifact_count %d after refused writes, want 1", n)
	}
}

// TestSnapshotBuilds: the generated SNAPSHOT metadata follows the stored
// builds, and the non-unique name serves the newest build.
func TestSnapshotBuilds(t *testing.T) {
	e := clienttest.Start(t)
	e.CreateRepo("snaps", "maven", true)
	base := "/maven2/snaps/org/demo/app/1.0-SNAPSHOT/"
	admin := e.Admin
	e.Do("PUT", base+"app-1.0-20261121.235031-1.jar", admin, "build one").Want(201)
	e.Do("PUT", base+"app-1.0-20261121.235031-1-sources.jar", admin, "sources one").Want(201)
	e.Do("PUT", base+"app-1.0-20261122.080000-2.jar", admin, "build two").Want(201)
	// Redeploying a SNAPSHOT file replaces it.
	e.Do("PUT", base+"app-1.0-20261122.080000-2.jar", admin, "build two, again").Want(201)

	md := string(e.Do("GET", base+"maven-metadata.xml", "", nil).Want(200).Body)
	for _, s := range []string{`<metadata modelVersion="1.1.0">`, "<version>1.0-SNAPSHOT</version>",
		"<timestamp>20261122.080000</timestamp>", "<buildNumber>2</buildNumber>",
		"<extension>jar</extension>\n        <value>1.0-20261122.080000-2</value>",
		"<classifier>sources</classifier>\n        <extension>jar</extension>\n        <value>1.0-20261121.235031-1</value>"} {
		if !strings.Contains(md, s) {
			t.Errorf("snapshot metadata lacks %q:\n%s", s, md)
		}
	}
	if got := string(e.Do("GET", base+"maven-metadata.xml.sha1", "", nil).Want(200).Body); got != sha1hex([]byte(md)) {
		t.Errorf("metadata sha1 %s does not hash the served document", got)
	}
	if got := string(e.Do("GET", base+"app-1.0-SNAPSHOT.jar", "", nil).Want(200).Body); got != "build two, again" {
		t.Errorf("non-unique name served %q", got)
	}
	if got := string(e.Do("GET", base+"app-1.0-SNAPSHOT-sources.jar.sha1", "", nil).Want(200).Body); got != sha1hex([]byte("sources one")) {
		t.Errorf("non-unique sidecar served %q", got)
	}
	art := string(e.Do("GET", "/maven2/snaps/org/demo/app/maven-metadata.xml", "", nil).Want(200).Body)
	if !strings.Contains(art, "<latest>1.0-SNAPSHOT</latest>") || strings.Contains(art, "<release>") {
		t.Errorf("artifact metadata of a SNAPSHOT-only artifact:\n%s", art)
	}
}
