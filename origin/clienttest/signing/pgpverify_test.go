package signing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// pgpverify is the Maven plugin that checks the signatures of a build's
// dependencies; .ci/run puts it and its dependencies in the user's Maven
// repository (Debian's packages have no such plugin).
const pgpverify = "org.simplify4u.plugins:pgpverify-maven-plugin:1.18.2"

// TestMavenBuildChecksSignatures: a Maven build with signature checking
// (pgpverify-maven-plugin, fetching keys from the registry's HKP key
// server) accepts a dependency the registry signed on upload, jar and
// POM, with the key the project's keys map names; it refuses a
// dependency uploaded unsigned, and the signed one when the keys map
// names another key.
func TestMavenBuildChecksSignatures(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	prefetched := filepath.Join(os.Getenv("HOME"), ".m2", "repository")
	if _, err := os.Stat(filepath.Join(prefetched, "org/simplify4u/plugins/pgpverify-maven-plugin/1.18.2")); err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatalf("%s is not in %s (.ci/run fetches it): %v", pgpverify, prefetched, err)
		}
		t.Skipf("%s is not in %s: %v", pgpverify, prefetched, err)
	}
	e := start(t)
	pgp := newKey(t, e, "maven release", "openpgp")
	other := newKey(t, e, "another", "openpgp")
	libs := e.CreateRepo("libs", "maven", false)
	url := e.URL + "/maven/libs"
	m := clienttest.NewMaven(t, url, "admin", origintest.AdminPassword)
	// The plugin comes from where .ci/run fetched it; the dependencies
	// from the registry alone.
	settings, _ := os.ReadFile(m.Settings)
	os.WriteFile(m.Settings, []byte(strings.Replace(string(settings), "</pluginRepositories>",
		"<pluginRepository><id>prefetched</id><url>file://"+prefetched+"</url></pluginRepository></pluginRepositories>", 1)), 0o644)

	deploy := func(artifact string) {
		dir := t.TempDir()
		jar, pom := filepath.Join(dir, artifact+"-1.0.jar"), filepath.Join(dir, "pom.xml")
		clienttest.WriteFile(t, jar, "PK\x03\x04 "+artifact)
		clienttest.WriteFile(t, pom, `<project><modelVersion>4.0.0</modelVersion><groupId>com.acme</groupId><artifactId>`+artifact+
			`</artifactId><version>1.0</version></project>`)
		m.DeployJar(url, jar, pom)
	}
	deploy("plain") // before the repository signs
	e.Do("PUT", "/api/v1/repositories/"+libs, e.Admin, map[string]any{"settings": map[string]string{"signing_key": pgp.ID}}).Want(200)
	deploy("demo")
	for _, f := range []string{"demo-1.0.jar.asc", "demo-1.0.pom.asc"} {
		for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if e.Do("GET", "/maven/libs/com/acme/demo/1.0/"+f, e.Admin, nil).Status == 200 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%s never came", f)
			}
		}
	}

	check := func(dependency, fingerprint string) (string, error) {
		dir := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(dir, "keysmap.list"), "com.acme:"+dependency+" = 0x"+strings.ToUpper(fingerprint)+"\n")
		clienttest.WriteFile(t, filepath.Join(dir, "pom.xml"), `<project><modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId><artifactId>app</artifactId><version>1.0</version>
  <dependencies><dependency><groupId>com.acme</groupId><artifactId>`+dependency+`</artifactId><version>1.0</version></dependency></dependencies>
  <build><plugins><plugin><groupId>org.simplify4u.plugins</groupId><artifactId>pgpverify-maven-plugin</artifactId><version>1.18.2</version>
    <configuration>
      <pgpKeyServer>hkp://`+clienttest.HostPort(e)+`</pgpKeyServer>
      <keysMapLocations><keysMapLocation>${project.basedir}/keysmap.list</keysMapLocation></keysMapLocations>
      <strictNoSignature>true</strictNoSignature>
      <failNoSignature>true</failNoSignature>
      <pgpKeysCachePath>${project.basedir}/keys</pgpKeysCachePath>
    </configuration>
  </plugin></plugins></build>
</project>
`)
		return clienttest.TryRun(m.Cmd(dir, pgpverify+":check"))
	}
	if out, err := check("demo", pgp.Fingerprint); err != nil || !strings.Contains(out, "com.acme:demo:jar:1.0 PGP Signature OK") ||
		!strings.Contains(out, "com.acme:demo:pom:1.0 PGP Signature OK") || !strings.Contains(out, "/pks/lookup?op=get") {
		t.Fatalf("the build with the registry's signatures: %v\n%s", err, out)
	}
	if out, err := check("plain", pgp.Fingerprint); err == nil || !strings.Contains(out, "plain") {
		t.Fatalf("the build with an unsigned dependency: %v\n%s", err, out)
	}
	if out, err := check("demo", other.Fingerprint); err == nil {
		t.Fatalf("the build whose keys map names another key: %v\n%s", err, out)
	}
}
