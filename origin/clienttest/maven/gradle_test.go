package maven_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestGradleModuleMetadata: a gradle repository is a maven repository.
// The files Gradle's maven-publish plugin uploads (the jar, the pom and
// the Gradle module metadata .module beside them, each with its .md5,
// .sha1, .sha256 and .sha512, then maven-metadata.xml) are stored and
// served back as sent, the .module as JSON; the checksums the server
// computes agree with the uploaded ones. (Gradle itself is not installed
// here: its distribution is not on Maven Central; this replays its
// requests.)
func TestGradleModuleMetadata(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("libs", "gradle", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	base := "/maven2/libs/com/example/greeter/1.0/greeter-1.0"
	module := `{"formatVersion":"1.1","component":{"group":"com.example","module":"greeter","version":"1.0"},` +
		`"variants":[{"name":"apiElements","attributes":{"org.gradle.usage":"java-api"},"files":[{"name":"greeter-1.0.jar","url":"greeter-1.0.jar"}]}]}`
	files := map[string]string{
		".jar":    "jar bytes",
		".pom":    "<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>greeter</artifactId><version>1.0</version></project>",
		".module": module,
	}
	sums := func(b []byte) map[string]string {
		m5, s1, s256, s512 := md5.Sum(b), sha1.Sum(b), sha256.Sum256(b), sha512.Sum512(b)
		return map[string]string{".md5": hex.EncodeToString(m5[:]), ".sha1": hex.EncodeToString(s1[:]),
			".sha256": hex.EncodeToString(s256[:]), ".sha512": hex.EncodeToString(s512[:])}
	}
	for _, ext := range []string{".jar", ".pom", ".module"} {
		body := []byte(files[ext])
		e.Do("PUT", base+ext, alice.Basic(), body).Want(201)
		for sumExt, sum := range sums(body) {
			r := e.Do("PUT", base+ext+sumExt, alice.Basic(), sum)
			if r.Status/100 != 2 {
				t.Fatalf("PUT %s%s: %d %s", ext, sumExt, r.Status, r.Body)
			}
		}
	}
	meta := "<metadata><groupId>com.example</groupId><artifactId>greeter</artifactId><versioning><release>1.0</release></versioning></metadata>"
	if r := e.Do("PUT", "/maven2/libs/com/example/greeter/maven-metadata.xml", alice.Basic(), meta); r.Status/100 != 2 {
		t.Fatalf("maven-metadata.xml: %d %s", r.Status, r.Body)
	}
	for _, ext := range []string{".jar", ".pom", ".module"} {
		r := e.Do("GET", base+ext, alice.Basic(), nil).Want(200)
		if string(r.Body) != files[ext] {
			t.Fatalf("GET %s: %q", ext, r.Body)
		}
		for sumExt, sum := range sums([]byte(files[ext])) {
			if got := strings.TrimSpace(string(e.Do("GET", base+ext+sumExt, alice.Basic(), nil).Want(200).Body)); got != sum {
				t.Fatalf("GET %s%s: %q, want %q", ext, sumExt, got, sum)
			}
		}
	}
	if ct := e.Do("GET", base+".module", alice.Basic(), nil).Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		t.Errorf(".module served as %q, want JSON", ct)
	}
	if r := e.Do("GET", "/maven2/libs/com/example/greeter/maven-metadata.xml", alice.Basic(), nil).Want(200); !strings.Contains(string(r.Body), "<version>1.0</version>") {
		t.Fatalf("maven-metadata.xml:\n%s", r.Body)
	}
}
