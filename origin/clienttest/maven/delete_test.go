package maven_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// extensionConsumer loads demo at version (a range or one version) as a
// build extension, which mvn resolves, jar and POM, during validate.
func extensionConsumer(version string) string {
	return pomHead + `  <groupId>com.example</groupId><artifactId>consumer</artifactId><version>1</version>
  <build><extensions>
    <extension><groupId>com.example</groupId><artifactId>demo</artifactId><version>` + version + `</version></extension>
  </extensions></build>
</project>
`
}

// uploadedID finds the artifact id of the upload whose bytes are body
// (the REST API names a version by its main file; events name each file).
func uploadedID(t *testing.T, e *origintest.Env, body []byte) string {
	t.Helper()
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var out struct {
			Events []struct {
				Data struct {
					ArtifactID string `json:"artifact_id"`
					SHA256     string `json:"checksum_sha256"`
				} `json:"data"`
			} `json:"events"`
		}
		e.Do("GET", "/api/v1/events?limit=1000&types=artifact.uploaded", e.Admin, nil).Want(200).JSON(&out)
		for _, ev := range out.Events {
			if ev.Data.SHA256 == want {
				return ev.Data.ArtifactID
			}
		}
	}
	t.Fatalf("no upload event for sha256 %s", want)
	return ""
}

// TestRESTDelete: deleting files of a Maven version through the REST API
// leaves the repository installable for real mvn. The versions list names
// the jar; a sources jar deleted alone leaves the build resolving; the
// POM deleted takes the whole build with it, so the generated metadata
// stops offering the version and a range resolves the one before.
func TestRESTDelete(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	e := clienttest.Start(t)
	repoID := e.CreateRepo("libs", "maven", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write", "delete")
	url := e.URL + "/maven2/libs"
	auth := basic(alice.Name, alice.Password)
	m := newMvn(t, url, alice.Name, alice.Password)
	work := t.TempDir()
	var pomBytes, sourcesBytes []byte
	for _, v := range []string{"1.0", "1.1"} {
		jar, _ := makeJar(t, work, "demo-"+v+".jar", "release-"+v)
		pom := filepath.Join(work, "demo-"+v+".xml")
		clienttest.WriteFile(t, pom, libPOM("demo", v))
		if v == "1.0" {
			m.DeployJar(url, jar, pom)
			continue
		}
		var sources string
		sources, sourcesBytes = makeJar(t, work, "demo-"+v+"-sources.jar", "sources-"+v)
		m.Run(m.Home, deployArgs(url, jar, "-DpomFile="+pom, "-Dsources="+sources)...)
		var err error
		if pomBytes, err = os.ReadFile(pom); err != nil {
			t.Fatal(err)
		}
	}
	base := "/maven2/libs/com/example/demo/"

	type version struct {
		Version    string `json:"version"`
		ArtifactID string `json:"artifact_id"`
		FileCount  int    `json:"file_count"`
	}
	versions := func() map[string]version {
		var out struct {
			Versions []version `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/com.example:demo/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&out)
		got := map[string]version{}
		for _, v := range out.Versions {
			got[v.Version] = v
		}
		return got
	}
	v11 := versions()["1.1"]
	var a artifact
	e.Do("GET", "/api/v1/artifacts/"+v11.ArtifactID, e.Admin, nil).Want(200).JSON(&a)
	if !strings.HasSuffix(a.Path, "/demo-1.1.jar") || v11.FileCount != 3 {
		t.Fatalf("version 1.1 is named by %s with %d files; want its jar, 3 files", a.Path, v11.FileCount)
	}
	resolve := func(version string) (string, error) {
		m := newMvn(t, url, alice.Name, alice.Password) // a fresh local repository
		dir := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(dir, "pom.xml"), extensionConsumer(version))
		out, err := clienttest.TryRun(m.Cmd(dir, "validate"))
		if err != nil {
			return out, err
		}
		jar, rerr := os.ReadFile(filepath.Join(m.Local, "com/example/demo", strings.Trim(version, "[)"), "demo-"+strings.Trim(version, "[)")+".jar"))
		if rerr == nil {
			return unzipMarker(t, string(jar)), nil
		}
		return out, nil
	}

	// A sources jar goes alone: the build still resolves.
	e.Do("DELETE", "/api/v1/artifacts/"+uploadedID(t, e, sourcesBytes), e.Admin, nil).Want(204)
	e.Do("GET", base+"1.1/demo-1.1-sources.jar", auth, nil).Want(404)
	e.Do("GET", base+"1.1/demo-1.1.jar", auth, nil).Want(200)
	if got, err := resolve("1.1"); err != nil || got != "release-1.1\n" {
		t.Fatalf("demo 1.1 without its sources: %v\n%s", err, got)
	}
	if n := versions()["1.1"].FileCount; n != 2 {
		t.Fatalf("1.1 has %d files after its sources went, want 2", n)
	}

	// The POM takes the build: the jar goes too, the metadata offers 1.0
	// alone, a range resolves 1.0 and 1.1 is not found.
	e.Do("DELETE", "/api/v1/artifacts/"+uploadedID(t, e, pomBytes), e.Admin, nil).Want(204)
	e.Do("GET", base+"1.1/demo-1.1.jar", auth, nil).Want(404)
	if _, ok := versions()["1.1"]; ok {
		t.Fatal("the REST API still lists 1.1 after its POM was deleted")
	}
	md := string(e.Do("GET", base+"maven-metadata.xml", auth, nil).Want(200).Body)
	if strings.Contains(md, "1.1") || !strings.Contains(md, "<release>1.0</release>") {
		t.Fatalf("metadata after deleting 1.1:\n%s", md)
	}
	m2 := newMvn(t, url, alice.Name, alice.Password)
	dir := t.TempDir()
	clienttest.WriteFile(t, filepath.Join(dir, "pom.xml"), extensionConsumer("[1.0,2.0)"))
	if out, err := clienttest.TryRun(m2.Cmd(dir, "validate")); err != nil {
		t.Fatalf("a range after deleting 1.1: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(m2.Local, "com/example/demo/1.0/demo-1.0.jar")); err != nil || unzipMarker(t, string(b)) != "release-1.0\n" {
		t.Fatalf("the range did not resolve demo 1.0: %v", err)
	}
	if out, err := resolve("1.1"); err == nil {
		t.Fatalf("demo 1.1 still resolves after its POM was deleted:\n%s", out)
	}
}
