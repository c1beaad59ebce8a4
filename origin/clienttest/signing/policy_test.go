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

// TestPolicyRequiresSignature: with a policy requiring a signature by a
// given key on a docker repository, at the origin and through an edge
// (from its replica): a reader's crane pull of an unsigned image is
// refused with the policy's reason; the writer, who signs, still pulls
// it (and resolves its digest); once signed through the API the reader
// pulls it, and cosign, run by the reader, reads the signature manifest
// the policy does not block; a signature by another key does not count.
func TestPolicyRequiresSignature(t *testing.T) {
	bins := clienttest.RequireClients(t, "crane", "cosign")
	clienttest.Targets(t, start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("images", "docker", false)
		alice, rita := clienttest.NewUser(e, "alice"), clienttest.NewUser(e, "rita", "repository:read")
		e.Grant(repoID, alice.ID, false, "read", "write")
		e.Grant(repoID, rita.ID, false, "read")
		host, work := clienttest.HostPort(e), t.TempDir()
		envOf := func(u clienttest.User) []string {
			home := filepath.Join(work, u.Name)
			return []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker"), "SIGSTORE_NO_CACHE=1", "TUF_ROOT=" + filepath.Join(home, "tuf")}
		}
		run := func(u clienttest.User, name string, args ...string) (string, error) {
			return clienttest.TryRun(clienttest.Cmd{Dir: work, Env: envOf(u), Name: bins[name], Args: args})
		}
		for _, u := range []clienttest.User{alice, rita} {
			if out, err := run(u, "crane", "auth", "login", host, "-u", u.Name, "-p", u.Token); err != nil {
				t.Fatalf("crane auth login: %v\n%s", err, out)
			}
		}
		os.WriteFile(filepath.Join(work, "layer.tar"), tarOf(t, "app.txt", "to be signed\n"), 0o644)
		if out, err := run(alice, "crane", "append", "--insecure", "-f", "layer.tar", "-t", host+"/images/app:1.0"); err != nil {
			t.Fatalf("crane append: %v\n%s", err, out)
		}
		release, other := newKey(t, e, "release", "ed25519"), newKey(t, e, "other", "ecdsa-p256")
		e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "signed images", "enabled": true,
			"scope": map[string]any{"repositories": []string{"images"}},
			"rules": map[string]any{"require_signature": true, "signing_keys": []string{release.ID}}}).Want(201)
		pull := func(u clienttest.User) (string, error) {
			return run(u, "crane", "pull", "--insecure", host+"/images/app:1.0", filepath.Join(work, u.Name+".tar"))
		}
		eventually := func(what string, ok func() (bool, string)) {
			t.Helper()
			var last string
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				var good bool
				if good, last = ok(); good {
					return
				}
			}
			t.Fatalf("%s:\n%s", what, last)
		}
		eventually("the reader's pull of an unsigned image is refused", func() (bool, string) {
			out, err := pull(rita)
			return err != nil && strings.Contains(out, "signed images") && strings.Contains(out, "not signed by a key it accepts"), out
		})
		if out, err := pull(alice); err != nil {
			t.Fatalf("the writer's pull: %v\n%s", err, out)
		}
		digest, err := run(alice, "crane", "digest", "--insecure", host+"/images/app:1.0")
		if err != nil {
			t.Fatal(err, digest)
		}
		var versions struct {
			Versions []struct {
				Version    string
				ArtifactID string `json:"artifact_id"`
			}
		}
		e.Do("GET", "/api/v1/packages/app/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&versions)
		sign := func(keyID string) {
			for _, v := range versions.Versions {
				if v.Version == "1.0" {
					e.Do("POST", "/api/v1/signing/sign", alice.Basic(), map[string]string{"artifact_id": v.ArtifactID, "key_id": keyID}).Want(201)
				}
			}
		}
		sign(other.ID)
		time.Sleep(300 * time.Millisecond)
		if out, err := pull(rita); err == nil {
			t.Fatalf("signed by a key the policy does not accept, the reader pulled:\n%s", out)
		}
		sign(release.ID)
		eventually("the reader's pull of the signed image", func() (bool, string) {
			out, err := pull(rita)
			return err == nil, out
		})
		pub := filepath.Join(work, "release.pub")
		os.WriteFile(pub, []byte(release.PublicKey), 0o644)
		if out, err := run(rita, "cosign", "verify", "--key", pub, "--insecure-ignore-tlog=true", "--allow-insecure-registry", "--allow-http-registry",
			host+"/images/app:1.0"); err != nil || !strings.Contains(out, strings.TrimSpace(lastLine(digest))) {
			t.Fatalf("cosign verify by the reader: %v\n%s", err, out)
		}
	})
}
