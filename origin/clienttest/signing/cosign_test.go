package signing_test

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestCosignVerifies: an image signed through the API with an ECDSA and
// then an ed25519 key is verified by the cosign CLI with each key's
// public part as served (offline: no transparency log), both signatures
// in the one signature manifest; the referrers API lists it; an image
// not signed fails; and cosign's own signature appended later (cosign
// sign) keeps Depot's verifying.
func TestCosignVerifies(t *testing.T) {
	bins := clienttest.RequireClients(t, "crane", "cosign")
	e := start(t)
	repoID := e.CreateRepo("images", "docker", false)
	host, work, home := clienttest.HostPort(e), t.TempDir(), clienttest.Home(t)
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker"), "COSIGN_PASSWORD=cosign-pw", "COSIGN_YES=true",
		"SIGSTORE_NO_CACHE=1", "TUF_ROOT=" + filepath.Join(home, "tuf")}
	run := func(name string, args ...string) (string, error) {
		return clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins[name], Args: args})
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := run(name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(out)
	}
	must("crane", "auth", "login", host, "-u", "admin", "-p", origintest.AdminPassword)
	layer := func(name, content string) string {
		p := filepath.Join(work, name+".tar")
		os.WriteFile(p, tarOf(t, name, content), 0o644)
		return p
	}
	must("crane", "append", "--insecure", "-f", layer("app.txt", "signed image\n"), "-t", host+"/images/app:1.0")
	must("crane", "append", "--insecure", "-f", layer("other.txt", "unsigned image\n"), "-t", host+"/images/other:1.0")
	digest := lastLine(must("crane", "digest", "--insecure", host+"/images/app:1.0"))

	var versions struct {
		Versions []struct {
			Version    string
			ArtifactID string `json:"artifact_id"`
		}
	}
	e.Do("GET", "/api/v1/packages/app/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&versions)
	artID := ""
	for _, v := range versions.Versions {
		if v.Version == "1.0" {
			artID = v.ArtifactID
		}
	}
	if artID == "" {
		t.Fatalf("the tag's artifact: %+v", versions)
	}
	verify := func(pub, ref string) (string, error) {
		return run("cosign", "verify", "--key", pub, "--insecure-ignore-tlog=true", "--allow-insecure-registry", "--allow-http-registry", ref)
	}
	var pubs []string
	for _, alg := range []string{"ecdsa-p256", "ed25519"} {
		k := newKey(t, e, "image "+alg, alg)
		pub := filepath.Join(work, alg+".pub")
		os.WriteFile(pub, e.Do("GET", "/api/v1/signing/keys/"+k.ID+"/public", "", nil).Want(200).Body, 0o644)
		e.Do("POST", "/api/v1/signing/sign", e.Admin, map[string]string{"artifact_id": artID, "key_id": k.ID}).Want(201)
		pubs = append(pubs, pub)
	}
	for _, pub := range pubs {
		if out, err := verify(pub, host+"/images/app:1.0"); err != nil || !strings.Contains(out, digest) {
			t.Errorf("cosign verify --key %s: %v\n%s", filepath.Base(pub), err, out)
		}
	}
	if out, err := verify(pubs[0], host+"/images/other:1.0"); err == nil {
		t.Errorf("cosign verified an image never signed:\n%s", out)
	}
	referrers := string(e.Do("GET", "/v2/images/app/referrers/"+digest, e.Admin, nil).Want(200).Body)
	if !strings.Contains(referrers, "application/vnd.oci.image.manifest.v1+json") || !strings.Contains(referrers, `"digest"`) {
		t.Errorf("the referrers of the image: %s", referrers)
	}

	// cosign's own signature goes beside Depot's.
	must("cosign", "generate-key-pair")
	if out, err := run("cosign", "sign", "--key", "cosign.key", "--tlog-upload=false", "--allow-insecure-registry", "--allow-http-registry",
		host+"/images/app@"+digest); err != nil {
		t.Fatalf("cosign sign: %v\n%s", err, out)
	}
	for _, pub := range append(pubs, filepath.Join(work, "cosign.pub")) {
		if out, err := verify(pub, host+"/images/app:1.0"); err != nil {
			t.Errorf("after cosign sign, cosign verify --key %s: %v\n%s", filepath.Base(pub), err, out)
		}
	}
}

// tarOf is a layer of one file.
func tarOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
