package maven_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

const pomHead = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
`

func parentPOM(marker string) string {
	return pomHead + `  <groupId>com.example</groupId><artifactId>parent</artifactId><version>1.0-SNAPSHOT</version>
  <packaging>pom</packaging>
  <properties><depot.marker>` + marker + `</depot.marker></properties>
</project>
`
}

// libPOM is the POM of a jar loaded as a build extension. It names its
// plexus-utils (one Debian's repository has), or mvn would add 1.1, which
// is nowhere here.
func libPOM(artifact, version string) string {
	return pomHead + `  <groupId>com.example</groupId><artifactId>` + artifact + `</artifactId><version>` + version + `</version>
  <dependencies>
    <dependency><groupId>org.codehaus.plexus</groupId><artifactId>plexus-utils</artifactId><version>3.4.2</version></dependency>
  </dependencies>
</project>
`
}

const bomPOM = pomHead + `  <groupId>com.example</groupId><artifactId>bom</artifactId><version>1.0</version>
  <packaging>pom</packaging>
  <dependencyManagement><dependencies>
    <dependency><groupId>com.example</groupId><artifactId>demo</artifactId><version>1.0</version></dependency>
  </dependencies></dependencyManagement>
</project>
`

// consumerPOM inherits the SNAPSHOT parent, imports the BOM (without it
// the version-less dependency fails model validation) and loads the
// release and SNAPSHOT jars as build extensions, which mvn resolves
// (jar and pom) during validate.
const consumerPOM = pomHead + `  <parent><groupId>com.example</groupId><artifactId>parent</artifactId><version>1.0-SNAPSHOT</version>
    <relativePath/></parent>
  <artifactId>consumer</artifactId>
  <dependencyManagement><dependencies>
    <dependency><groupId>com.example</groupId><artifactId>bom</artifactId><version>1.0</version>
      <type>pom</type><scope>import</scope></dependency>
  </dependencies></dependencyManagement>
  <dependencies>
    <dependency><groupId>com.example</groupId><artifactId>demo</artifactId></dependency>
  </dependencies>
  <build><extensions>
    <extension><groupId>com.example</groupId><artifactId>demo</artifactId><version>1.0</version></extension>
    <extension><groupId>com.example</groupId><artifactId>tool</artifactId><version>2.0-SNAPSHOT</version></extension>
  </extensions></build>
</project>
`

type snapshotDoc struct {
	Version    string `xml:"version"`
	Versioning struct {
		Snapshot struct {
			Timestamp   string `xml:"timestamp"`
			BuildNumber int    `xml:"buildNumber"`
		} `xml:"snapshot"`
		SnapshotVersions []struct {
			Classifier string `xml:"classifier"`
			Extension  string `xml:"extension"`
			Value      string `xml:"value"`
		} `xml:"snapshotVersions>snapshotVersion"`
	} `xml:"versioning"`
}

// TestMvnDeployAndResolve deploys with real mvn (a release jar and POMs
// with a password, a SNAPSHOT jar and POM twice with an API token), then
// resolves all of it with mvn from a fresh local repository as a reader.
func TestMvnDeployAndResolve(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("libs", "maven", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		url := e.URL + "/maven2/libs"
		work := t.TempDir()
		auth := basic(alice.Name, alice.Password)

		t.Run("release with password", func(t *testing.T) {
			e := e.For(t)
			m := newMvn(t, url, alice.Name, alice.Password)
			jar, jarBytes := makeJar(t, work, "demo-1.0.jar", "release-1.0")
			pom := filepath.Join(work, "demo.xml")
			clienttest.WriteFile(t, pom, libPOM("demo", "1.0"))
			m.DeployJar(url, jar, pom)
			clienttest.WriteFile(t, filepath.Join(work, "bom.xml"), bomPOM)
			m.DeployPOM(url, filepath.Join(work, "bom.xml"))

			base := "/maven2/libs/com/example/demo/"
			// mvn's GETs are not preemptive: the challenge is what makes it
			// send credentials.
			r := e.Do("GET", base+"1.0/demo-1.0.jar", "", nil).Want(401)
			if got := r.Header.Get("WWW-Authenticate"); got != `Basic realm="Depot"` {
				t.Errorf("WWW-Authenticate = %q", got)
			}
			if got := e.Do("GET", base+"1.0/demo-1.0.jar", auth, nil).Want(200).Body; !bytes.Equal(got, jarBytes) {
				t.Errorf("jar differs from the deployed one")
			}
			if got := string(e.Do("GET", base+"1.0/demo-1.0.jar.sha1", auth, nil).Want(200).Body); got != sha1hex(jarBytes) {
				t.Errorf("jar.sha1 = %q, want %q", got, sha1hex(jarBytes))
			}
			md := e.Do("GET", base+"maven-metadata.xml", auth, nil).Want(200).Body
			for _, s := range []string{"<groupId>com.example</groupId>", "<artifactId>demo</artifactId>", "<release>1.0</release>",
				"<latest>1.0</latest>", "<version>1.0</version>", "<lastUpdated>"} {
				if !strings.Contains(string(md), s) {
					t.Errorf("metadata lacks %s:\n%s", s, md)
				}
			}
			if got := string(e.Do("GET", base+"maven-metadata.xml.sha1", auth, nil).Want(200).Body); got != sha1hex(md) {
				t.Errorf("metadata .sha1 %q is not the sha1 of the served document %q", got, sha1hex(md))
			}
			// The POM is stored too, and both are listed in the REST API.
			e.Do("GET", base+"1.0/demo-1.0.pom", auth, nil).Want(200)
			assertListed(t, e, repoID, "com.example:demo", "1.0", 2, alice.Name)
			clienttest.WantEvents(t, e, "artifact.uploaded", "maven", "com.example:demo@1.0")
			assertListed(t, e, repoID, "com.example:bom", "1.0", 1, alice.Name)
		})

		t.Run("redeploying a release is refused", func(t *testing.T) {
			e := e.For(t)
			before, size := e.RepoCounters(repoID)
			m := newMvn(t, url, alice.Name, alice.Password)
			jar, _ := makeJar(t, t.TempDir(), "demo-1.0.jar", "other bytes")
			out, err := clienttest.TryRun(m.Cmd(m.Home, deployArgs(url, jar, "-DgroupId=com.example", "-DartifactId=demo",
				"-Dversion=1.0", "-Dpackaging=jar")...))
			if err == nil || !strings.Contains(out, "409") {
				t.Fatalf("redeploy of a release: err %v, output:\n%s", err, out)
			}
			if n, s := e.RepoCounters(repoID); n != before || s != size {
				t.Errorf("artifact_count/size_bytes %d/%d after a refused deploy, want %d/%d", n, s, before, size)
			}
		})

		t.Run("snapshot twice with token", func(t *testing.T) {
			e := e.For(t)
			m := newMvn(t, url, alice.Name, alice.Token)
			var values []string // the tool jar's file version after each deploy
			for i, marker := range []string{"build-1", "build-2"} {
				jar, _ := makeJar(t, t.TempDir(), "tool-2.0-SNAPSHOT.jar", "tool "+marker)
				pom := filepath.Join(t.TempDir(), "tool.xml")
				clienttest.WriteFile(t, pom, libPOM("tool", "2.0-SNAPSHOT"))
				m.DeployJar(url, jar, pom)
				parent := filepath.Join(t.TempDir(), "parent.xml")
				clienttest.WriteFile(t, parent, parentPOM(marker))
				m.DeployPOM(url, parent)
				for a, v := range map[string]string{"tool": "2.0-SNAPSHOT", "parent": "1.0-SNAPSHOT"} {
					var doc snapshotDoc
					body := e.Do("GET", "/maven2/libs/com/example/"+a+"/"+v+"/maven-metadata.xml", basic(alice.Name, alice.Token), nil).
						Want(200).Body
					if err := xml.Unmarshal(body, &doc); err != nil {
						t.Fatal(err)
					}
					if doc.Versioning.Snapshot.BuildNumber != i+1 || len(doc.Versioning.SnapshotVersions) == 0 {
						t.Fatalf("%s after deploy %d: snapshot metadata\n%s", a, i+1, body)
					}
					for _, sv := range doc.Versioning.SnapshotVersions {
						if a == "tool" && sv.Extension == "jar" {
							values = append(values, sv.Value)
						}
						if !strings.HasSuffix(sv.Value, "-"+doc.Versioning.Snapshot.Timestamp+"-"+strconv.Itoa(i+1)) {
							t.Errorf("%s: snapshotVersion %+v does not name build %d", a, sv, i+1)
						}
					}
				}
			}
			// Both builds are kept, under the one version 2.0-SNAPSHOT.
			re := regexp.MustCompile(`^2\.0-\d{8}\.\d{6}-[12]$`)
			if len(values) != 2 || values[0] == values[1] {
				t.Fatalf("jar builds %v", values)
			}
			for _, v := range values {
				if !re.MatchString(v) {
					t.Errorf("unexpected snapshot version %s", v)
				}
				e.Do("GET", "/maven2/libs/com/example/tool/2.0-SNAPSHOT/tool-"+v+".jar", auth, nil).Want(200)
			}
			assertListed(t, e, repoID, "com.example:tool", "2.0-SNAPSHOT", 4, alice.Name)
		})

		t.Run("resolve from a fresh local repository", func(t *testing.T) {
			carol := clienttest.NewUser(e.For(t), "carol", "repository:read")
			e.For(t).Grant(repoID, carol.ID, false, "read")
			m := newMvn(t, url, carol.Name, carol.Token)
			dir := t.TempDir()
			clienttest.WriteFile(t, filepath.Join(dir, "pom.xml"), consumerPOM)
			out := m.Run(dir, "validate")
			if !strings.Contains(out, "BUILD SUCCESS") {
				t.Fatalf("validate:\n%s", out)
			}
			read := func(p string) string {
				b, err := os.ReadFile(filepath.Join(m.Local, p))
				if err != nil {
					t.Fatalf("not resolved: %v\n%s", err, out)
				}
				return string(b)
			}
			if got := read("com/example/parent/1.0-SNAPSHOT/parent-1.0-SNAPSHOT.pom"); !strings.Contains(got, "build-2") {
				t.Errorf("parent resolved to an older build:\n%s", got)
			}
			read("com/example/bom/1.0/bom-1.0.pom")
			if got := read("com/example/demo/1.0/demo-1.0.jar"); !strings.Contains(unzipMarker(t, got), "release-1.0") {
				t.Errorf("demo jar content %q", got)
			}
			if got := unzipMarker(t, read("com/example/tool/2.0-SNAPSHOT/tool-2.0-SNAPSHOT.jar")); got != "tool build-2\n" {
				t.Errorf("tool SNAPSHOT jar resolved to %q, want build 2", got)
			}
		})
	})
}
