package oci_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestOrasArtifact: the real oras pushes a non-image artifact (its own
// artifact type, two files) and pulls it back byte for byte; the manifest
// keeps the artifact type; a second tag is listed.
func TestOrasArtifact(t *testing.T) {
	t.Parallel()
	bins := clienttest.RequireClients(t, "oras")
	clienttest.Targets(t, func(t *testing.T) *origintest.Env { return start(t) }, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("artifacts", "docker", false)
		alice := writer(e, "alice", repoID)
		host, work, home := clienttest.HostPort(e), t.TempDir(), clienttest.Home(t)
		env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
		oras := func(dir string, args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env, Name: bins["oras"], Args: args})
		}
		oras(work, "login", host, "--plain-http", "-u", alice.Name, "-p", alice.Token)
		clienttest.WriteFile(t, filepath.Join(work, "sbom.json"), `{"bomFormat":"CycloneDX","components":[]}`)
		clienttest.WriteFile(t, filepath.Join(work, "notes.txt"), "release notes\n")
		ref := host + "/artifacts/app-sbom:v1"
		oras(work, "push", "--plain-http", "--artifact-type", "application/vnd.example.sbom", ref,
			"sbom.json:application/vnd.cyclonedx+json", "notes.txt:text/plain")
		oras(work, "tag", "--plain-http", ref, "latest")
		if tags := oras(work, "repo", "tags", "--plain-http", host+"/artifacts/app-sbom"); !strings.Contains(tags, "v1") || !strings.Contains(tags, "latest") {
			t.Fatalf("tags: %s", tags)
		}
		manifest := oras(work, "manifest", "fetch", "--plain-http", ref)
		if !strings.Contains(manifest, `"artifactType":"application/vnd.example.sbom"`) {
			t.Fatalf("manifest: %s", manifest)
		}
		out := filepath.Join(work, "pulled")
		oras(work, "pull", "--plain-http", "-o", out, host+"/artifacts/app-sbom:latest")
		for _, f := range []string{"sbom.json", "notes.txt"} {
			want, _ := os.ReadFile(filepath.Join(work, f))
			if got, err := os.ReadFile(filepath.Join(out, f)); err != nil || string(got) != string(want) {
				t.Fatalf("pulled %s: %q %v", f, got, err)
			}
		}
	})
}
