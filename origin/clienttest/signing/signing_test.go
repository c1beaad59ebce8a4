package signing_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// KEK is the key-encryption key the tests' origins seal keys with.
const KEK = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func start(t *testing.T) *origintest.Env {
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.SigningKEK = KEK }})
}

type key struct {
	ID, Algorithm, Fingerprint string
	PublicKey                  string `json:"public_key"`
}

func newKey(t *testing.T, e *origintest.Env, name, algorithm string) key {
	t.Helper()
	var k key
	e.Do("POST", "/api/v1/signing/keys", e.Admin, map[string]string{"name": name, "algorithm": algorithm, "email": "release@example.com"}).Want(201).JSON(&k)
	if k.Algorithm != algorithm {
		t.Fatalf("made a %s key, asked %s", k.Algorithm, algorithm)
	}
	return k
}

// TestOpenSSLVerifies: ed25519, ECDSA P-256 and RSA-4096 signatures of a
// file's SHA-256 are checked by openssl with the key's public part as
// served; a changed file fails the check.
func TestOpenSSLVerifies(t *testing.T) {
	bins := clienttest.RequireClients(t, "openssl")
	e := start(t)
	e.CreateRepo("files", "generic", false)
	content := []byte("a release archive's bytes\n")
	var art struct{ ID string }
	e.Do("PUT", "/generic/files/tool/1.0/tool.tar.gz", e.Admin, content).Want(201).JSON(&art)
	dir := t.TempDir()
	file, tampered := filepath.Join(dir, "tool.tar.gz"), filepath.Join(dir, "tampered")
	os.WriteFile(file, content, 0o644)
	os.WriteFile(tampered, append(content, '!'), 0o644)
	sum := sha256.Sum256(content)
	digest := filepath.Join(dir, "digest.bin")
	os.WriteFile(digest, sum[:], 0o644)
	other := sha256.Sum256(append(content, '!'))
	otherDigest := filepath.Join(dir, "other.bin")
	os.WriteFile(otherDigest, other[:], 0o644)

	for _, alg := range []string{"ed25519", "ecdsa-p256", "rsa-4096"} {
		k := newKey(t, e, "key "+alg, alg)
		pub := filepath.Join(dir, alg+".pem")
		os.WriteFile(pub, e.Do("GET", "/api/v1/signing/keys/"+k.ID+"/public", "", nil).Want(200).Body, 0o644)
		var sig struct{ Signature string }
		e.Do("POST", "/api/v1/signing/sign", e.Admin, map[string]string{"artifact_id": art.ID, "key_id": k.ID}).Want(201).JSON(&sig)
		raw, err := base64.StdEncoding.DecodeString(sig.Signature)
		if err != nil {
			t.Fatal(err)
		}
		sigFile := filepath.Join(dir, alg+".sig")
		os.WriteFile(sigFile, raw, 0o644)
		check := func(data, dgst string) (string, error) {
			if alg == "ed25519" { // ed25519 signs the digest's 32 bytes as its message
				return clienttest.TryRun(clienttest.Cmd{Name: bins["openssl"], Args: []string{"pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", dgst, "-sigfile", sigFile}})
			}
			return clienttest.TryRun(clienttest.Cmd{Name: bins["openssl"], Args: []string{"dgst", "-sha256", "-verify", pub, "-signature", sigFile, data}})
		}
		if out, err := check(file, digest); err != nil || !strings.Contains(out, "Verified") && !strings.Contains(out, "Success") {
			t.Errorf("%s: openssl did not verify: %v\n%s", alg, err, out)
		}
		if out, err := check(tampered, otherDigest); err == nil {
			t.Errorf("%s: openssl verified another file:\n%s", alg, out)
		}
	}
	var v struct {
		Verified   bool
		Signatures []struct{ Valid bool }
	}
	e.Do("GET", "/api/v1/signing/verify/"+art.ID, e.Admin, nil).Want(200).JSON(&v)
	if !v.Verified || len(v.Signatures) != 3 || !v.Signatures[0].Valid || !v.Signatures[1].Valid || !v.Signatures[2].Valid {
		t.Fatalf("verify: %+v", v)
	}
}

// TestGPGVerifiesMavenASC: a Maven artifact signed with an OpenPGP key
// has its .asc served beside it (and its checksum sidecars); Debian's
// gpg, given the key's public part as served, says the signature is
// good, and bad for other bytes. An .asc uploaded with a file is served
// as uploaded.
func TestGPGVerifiesMavenASC(t *testing.T) {
	bins := clienttest.RequireClients(t, "gpg")
	e := start(t)
	e.CreateRepo("libs", "maven", false)
	jar := []byte("PK\x03\x04 not really a jar, signed all the same")
	e.Do("PUT", "/maven/libs/com/acme/demo/1.0/demo-1.0.jar", e.Admin, jar).Want(201)
	jarSum := sha256.Sum256(jar)
	var found struct{ Results []struct{ ID string } }
	e.Do("GET", "/api/v1/search/checksum?checksum="+hex.EncodeToString(jarSum[:]), e.Admin, nil).Want(200).JSON(&found)
	if len(found.Results) != 1 {
		t.Fatalf("the jar: %+v", found)
	}
	art := found.Results[0]
	e.Do("GET", "/maven/libs/com/acme/demo/1.0/demo-1.0.jar.asc", e.Admin, nil).Want(404)
	k := newKey(t, e, "maven release", "openpgp")
	e.Do("POST", "/api/v1/signing/sign", e.Admin, map[string]string{"artifact_id": art.ID, "key_id": k.ID}).Want(201)
	r := e.Do("GET", "/maven/libs/com/acme/demo/1.0/demo-1.0.jar.asc", e.Admin, nil).Want(200)
	asc := r.Body
	if !strings.Contains(string(asc), "BEGIN PGP SIGNATURE") || r.Header.Get("Content-Type") != "application/pgp-signature" {
		t.Fatalf("the .asc: %s %s", r.Header.Get("Content-Type"), asc)
	}
	sum := sha256.Sum256(asc)
	if got := string(e.Do("GET", "/maven/libs/com/acme/demo/1.0/demo-1.0.jar.asc.sha256", e.Admin, nil).Want(200).Body); got != hex.EncodeToString(sum[:]) {
		t.Errorf("the .asc's sha256 sidecar %q", got)
	}

	home := t.TempDir()
	os.Chmod(home, 0o700)
	dir := t.TempDir()
	pub, file, sig, tampered := filepath.Join(dir, "key.asc"), filepath.Join(dir, "demo-1.0.jar"), filepath.Join(dir, "demo-1.0.jar.asc"), filepath.Join(dir, "other.jar")
	os.WriteFile(pub, e.Do("GET", "/api/v1/signing/keys/"+k.ID+"/public", "", nil).Want(200).Body, 0o644)
	os.WriteFile(file, jar, 0o644)
	os.WriteFile(sig, asc, 0o644)
	os.WriteFile(tampered, append(jar, '!'), 0o644)
	gpg := func(args ...string) (string, error) {
		return clienttest.TryRun(clienttest.Cmd{Name: bins["gpg"], Args: append([]string{"--homedir", home, "--batch"}, args...)})
	}
	defer clienttest.TryRun(clienttest.Cmd{Name: "gpgconf", Args: []string{"--homedir", home, "--kill", "all"}})
	// The key comes from the registry itself, as a key server (HKP).
	if out, err := gpg("--keyserver", "hkp://"+clienttest.HostPort(e), "--recv-keys", k.Fingerprint); err != nil || !strings.Contains(out, "imported") {
		t.Fatalf("gpg --recv-keys from the registry: %v\n%s", err, out)
	}
	e.Do("GET", "/pks/lookup?op=get&search=0x"+k.Fingerprint[24:], "", nil).Want(200)
	e.Do("GET", "/pks/lookup?op=get&search=0xDEADBEEFDEADBEEF", "", nil).Want(404)
	e.Do("GET", "/pks/lookup?op=get&search=nope", "", nil).Want(400)
	if out, err := gpg("--import", pub); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	if out, err := gpg("--verify", sig, file); err != nil || !strings.Contains(out, "Good signature") || !strings.Contains(out, strings.ToUpper(k.Fingerprint)) {
		t.Fatalf("gpg --verify: %v\n%s", err, out)
	}
	if out, err := gpg("--verify", sig, tampered); err == nil || !strings.Contains(out, "BAD signature") {
		t.Fatalf("gpg verified other bytes: %v\n%s", err, out)
	}

	// An .asc the publisher uploaded is served as uploaded.
	e.Do("PUT", "/maven/libs/com/acme/demo/1.0/demo-1.0.pom", e.Admin, []byte("<project/>")).Want(201)
	e.Do("PUT", "/maven/libs/com/acme/demo/1.0/demo-1.0.pom.asc", e.Admin, []byte("uploaded signature")).Want(201)
	if got := string(e.Do("GET", "/maven/libs/com/acme/demo/1.0/demo-1.0.pom.asc", e.Admin, nil).Want(200).Body); got != "uploaded signature" {
		t.Errorf("the uploaded .asc: %q", got)
	}
}
