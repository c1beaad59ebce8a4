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

// TestSignOnUpload: a repository whose signing_key setting names a key
// has each upload signed by the registry: a Maven jar deployed is soon
// served with an .asc gpg accepts, an image crane pushes soon verifies
// with cosign; a retired key is refused as the setting, and a file
// uploaded before the setting stays unsigned.
func TestSignOnUpload(t *testing.T) {
	bins := clienttest.RequireClients(t, "gpg", "crane", "cosign")
	e := start(t)
	pgp, ec := newKey(t, e, "maven release", "openpgp"), newKey(t, e, "images", "ecdsa-p256")
	old := newKey(t, e, "old", "ed25519")
	e.Do("POST", "/api/v1/signing/keys/"+old.ID+"/retire", e.Admin, nil).Want(200)
	libs := e.CreateRepo("libs", "maven", false)
	e.Do("PUT", "/maven/libs/com/acme/early/1.0/early-1.0.jar", e.Admin, []byte("before the setting")).Want(201)
	e.Do("PUT", "/api/v1/repositories/"+libs, e.Admin, map[string]any{"settings": map[string]string{"signing_key": old.ID}}).
		WantError(400, "VALIDATION_FAILED").WantField("settings")
	e.Do("PUT", "/api/v1/repositories/"+libs, e.Admin, map[string]any{"settings": map[string]string{"signing_key": "nope"}}).
		WantError(400, "VALIDATION_FAILED").WantField("settings")
	e.Do("PUT", "/api/v1/repositories/"+libs, e.Admin, map[string]any{"settings": map[string]string{"signing_key": pgp.ID}}).Want(200)
	var images struct{ ID string }
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "images", "format": "docker",
		"settings": map[string]string{"signing_key": ec.ID}}).Want(201).JSON(&images)

	jar := []byte("PK\x03\x04 a jar signed on upload")
	e.Do("PUT", "/maven/libs/com/acme/demo/2.0/demo-2.0.jar", e.Admin, jar).Want(201)
	var asc []byte
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && asc == nil; time.Sleep(100 * time.Millisecond) {
		if r := e.Do("GET", "/maven/libs/com/acme/demo/2.0/demo-2.0.jar.asc", e.Admin, nil); r.Status == 200 {
			asc = r.Body
		}
	}
	if asc == nil {
		t.Fatal("the deployed jar's .asc never came")
	}
	home, dir := t.TempDir(), t.TempDir()
	os.Chmod(home, 0o700)
	os.WriteFile(filepath.Join(dir, "key.asc"), []byte(pgp.PublicKey), 0o644)
	os.WriteFile(filepath.Join(dir, "demo-2.0.jar"), jar, 0o644)
	os.WriteFile(filepath.Join(dir, "demo-2.0.jar.asc"), asc, 0o644)
	gpg := func(args ...string) (string, error) {
		return clienttest.TryRun(clienttest.Cmd{Dir: dir, Name: bins["gpg"], Args: append([]string{"--homedir", home, "--batch", "--no-autostart"}, args...)})
	}
	if out, err := gpg("--import", "key.asc"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := gpg("--verify", "demo-2.0.jar.asc", "demo-2.0.jar"); err != nil || !strings.Contains(out, "Good signature") {
		t.Fatalf("gpg --verify: %v\n%s", err, out)
	}
	e.Do("GET", "/maven/libs/com/acme/early/1.0/early-1.0.jar.asc", e.Admin, nil).Want(404)

	host, work := clienttest.HostPort(e), t.TempDir()
	env := []string{"HOME=" + work, "DOCKER_CONFIG=" + filepath.Join(work, "docker"), "SIGSTORE_NO_CACHE=1", "TUF_ROOT=" + filepath.Join(work, "tuf")}
	run := func(name string, args ...string) (string, error) {
		return clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins[name], Args: args})
	}
	if out, err := run("crane", "auth", "login", host, "-u", "admin", "-p", origintest.AdminPassword); err != nil {
		t.Fatal(err, out)
	}
	os.WriteFile(filepath.Join(work, "layer.tar"), tarOf(t, "a.txt", "signed on push\n"), 0o644)
	if out, err := run("crane", "append", "--insecure", "-f", "layer.tar", "-t", host+"/images/app:2.0"); err != nil {
		t.Fatal(err, out)
	}
	os.WriteFile(filepath.Join(work, "ec.pub"), []byte(ec.PublicKey), 0o644)
	var out string
	var err error
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if out, err = run("cosign", "verify", "--key", "ec.pub", "--insecure-ignore-tlog=true", "--allow-insecure-registry", "--allow-http-registry",
			host+"/images/app:2.0"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("cosign verify of the pushed image: %v\n%s", err, out)
	}
}
