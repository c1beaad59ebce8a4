package maven_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// snakeyamlPOM is the POM of org.yaml:snakeyaml at version, loaded as a
// build extension (with the plexus-utils Debian's repository has, as
// libPOM's).
func snakeyamlPOM(version string) string {
	return pomHead + `  <groupId>org.yaml</groupId><artifactId>snakeyaml</artifactId><version>` + version + `</version>
  <dependencies>
    <dependency><groupId>org.codehaus.plexus</groupId><artifactId>plexus-utils</artifactId><version>3.4.2</version></dependency>
  </dependencies>
</project>
`
}

// extensionPOM is a project whose build loads org.yaml:snakeyaml at
// version as an extension: mvn resolves its POM and jar to validate.
func extensionPOM(version string) string {
	return pomHead + `  <groupId>com.example</groupId><artifactId>uses-snakeyaml</artifactId><version>1.0</version>
  <build><extensions>
    <extension><groupId>org.yaml</groupId><artifactId>snakeyaml</artifactId><version>` + version + `</version></extension>
  </extensions></build>
</project>
`
}

// TestPolicyBlocksResolution: snakeyaml 1.33 and 2.0 deployed with mvn are
// scanned on upload against the Maven advisories (1.33 with exactly the
// findings of the data's test case); under a policy that
// blocks high findings, mvn's resolution of 1.33 fails with the status
// line naming the policy and the advisory (what mvn shows of a refusal),
// and 2.0 resolves.
func TestPolicyBlocksResolution(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	e := clienttest.Start(t)
	repoID := e.CreateRepo("libs", "maven", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "read", "write")
	e.DoHeader("POST", "/api/v1/security/advisories?filename=maven.zip", e.Admin, vulntest.Zip(t, "Maven"),
		map[string]string{"Content-Type": "application/zip"}).Want(200)
	url := e.URL + "/maven2/libs"
	deployer := newMvn(t, url, alice.Name, alice.Token)
	work := t.TempDir()
	for _, v := range []string{"1.33", "2.0"} {
		jar, _ := makeJar(t, work, "snakeyaml-"+v+".jar", "snakeyaml "+v)
		pom := filepath.Join(work, "snakeyaml-"+v+".xml")
		clienttest.WriteFile(t, pom, snakeyamlPOM(v))
		deployer.DeployJar(url, jar, pom)
	}
	clienttest.WantCase(t, clienttest.ScanOf(t, e, repoID, "org.yaml:snakeyaml", "1.33"), "Maven", "org.yaml:snakeyaml")
	e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "no highs in libraries",
		"scope": map[string]any{"formats": []string{"maven"}}, "rules": map[string]any{"severity_threshold": "high", "block_download": true}}).Want(201)

	resolve := func(version string) (string, error) {
		dir := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(dir, "pom.xml"), extensionPOM(version))
		m := newMvn(t, url, alice.Name, alice.Token) // a fresh local repository
		return clienttest.TryRun(m.Cmd(dir, "validate"))
	}
	var out string
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		var err error
		if out, err = resolve("1.33"); err != nil && strings.Contains(out, "403") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("mvn resolved snakeyaml 1.33 under the policy (its scan never completed?):\n%s", out)
		}
	}
	if !strings.Contains(out, `blocked by security policy "no highs in libraries"`) || !strings.Contains(out, "GHSA-mjmj-j48q-9wg2") {
		t.Errorf("mvn says:\n%s", out)
	}
	if out, err := resolve("2.0"); err != nil {
		t.Fatalf("snakeyaml 2.0: %v\n%s", err, out)
	}
}
