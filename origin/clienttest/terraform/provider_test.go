package terraform_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// signer is a gpg home with one signing key.
type signer struct {
	t         *testing.T
	gpg, home string
	id        string // the key's long id
	armor     []byte // its public part, armored
}

func newSigner(t *testing.T, gpg, name string) *signer {
	t.Helper()
	s := &signer{t: t, gpg: gpg, home: t.TempDir()}
	os.Chmod(s.home, 0o700)
	t.Cleanup(func() {
		clienttest.TryRun(clienttest.Cmd{Name: "gpgconf", Args: []string{"--homedir", s.home, "--kill", "all"}})
	})
	s.run("--passphrase", "", "--quick-gen-key", name+" <"+name+"@example.com>", "rsa2048", "sign", "never")
	for _, line := range strings.Split(s.run("--list-keys", "--with-colons"), "\n") {
		if f := strings.Split(line, ":"); f[0] == "pub" && len(f) > 4 {
			s.id = f[4]
		}
	}
	s.armor = []byte(s.run("--armor", "--export", s.id))
	return s
}

func (s *signer) run(args ...string) string {
	s.t.Helper()
	out, err := clienttest.TryRun(clienttest.Cmd{Name: s.gpg, Args: append([]string{"--homedir", s.home, "--batch", "--pinentry-mode", "loopback"}, args...)})
	if err != nil {
		s.t.Fatalf("gpg %v: %v\n%s", args, err, out)
	}
	return out
}

// sign is the detached (binary) signature of data.
func (s *signer) sign(data []byte) []byte {
	s.t.Helper()
	dir := s.t.TempDir()
	in := filepath.Join(dir, "data")
	os.WriteFile(in, data, 0o644)
	s.run("--passphrase", "", "--local-user", s.id, "--output", in+".sig", "--detach-sign", in)
	sig, err := os.ReadFile(in + ".sig")
	if err != nil {
		s.t.Fatal(err)
	}
	return sig
}

// providerZip is a provider package: its executable (a script: init
// installs a provider, it does not run it).
func providerZip(t *testing.T, typ, version string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: "terraform-provider-" + typ + "_v" + version, Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("#!/bin/sh\necho a provider\n"))
	zw.Close()
	return b.Bytes()
}

// TestTerraformProviders: the example plugin is also a provider
// registry. A release as release tooling makes it (the zip, its SHA256SUMS
// and their detached signature) and the public key that signed it are
// published with PUT; the real terraform finds the provider by service
// discovery, picks the version its constraint allows, checks the
// package against the sums and the sums' signature against the
// repository's keys, and installs it. A release signed by a key the
// repository does not hold is refused by terraform.
func TestTerraformProviders(t *testing.T) {
	bins := clienttest.RequireClients(t, "terraform", "gpg")
	wasm := plugintest.Example(t, "terraform")
	clienttest.Targets(t, start, func(t *testing.T, e *origintest.Env) {
		e.Do("POST", "/api/v1/plugins", e.Admin, wasm).Want(http.StatusCreated)
		repoID := e.CreateRepo("infra", "terraform", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		basic := alice.Basic()
		release, stranger := newSigner(t, bins["gpg"], "release"), newSigner(t, bins["gpg"], "stranger")
		e.Do("PUT", "/terraform/providers/v1/infra/gpg-keys/"+release.id, basic, release.armor).Want(http.StatusCreated)
		e.Do("PUT", "/terraform/providers/v1/infra/gpg-keys/not-an-id", basic, release.armor).Want(http.StatusBadRequest)
		platform := runtime.GOOS + "_" + runtime.GOARCH
		publish := func(version string, s *signer) {
			t.Helper()
			base := "/terraform/providers/v1/infra/greet/" + version + "/terraform-provider-greet_" + version + "_"
			pkg := providerZip(t, "greet", version)
			sum := sha256.Sum256(pkg)
			sums := []byte(hex.EncodeToString(sum[:]) + "  terraform-provider-greet_" + version + "_" + platform + ".zip\n")
			e.Do("PUT", base+platform+".zip", basic, pkg).Want(http.StatusCreated)
			e.Do("PUT", base+"SHA256SUMS", basic, sums).Want(http.StatusCreated)
			e.Do("PUT", base+"SHA256SUMS.sig", basic, s.sign(sums)).Want(http.StatusCreated)
		}
		publish("1.0.0", release)
		publish("1.1.0", release)
		publish("2.0.0", stranger)
		e.Do("PUT", "/terraform/providers/v1/infra/greet/3.0.0/terraform-provider-greet_3.0.0_"+platform+".zip", basic, []byte("not a zip")).
			Want(http.StatusBadRequest)
		e.Do("PUT", "/terraform/providers/v1/infra/greet/3.0.0/other.zip", basic, providerZip(t, "greet", "3.0.0")).Want(http.StatusBadRequest)
		var listed struct {
			Versions []struct {
				Version   string
				Protocols []string
				Platforms []struct{ OS, Arch string }
			}
		}
		e.Do("GET", "/terraform/providers/v1/infra/greet/versions", basic, nil).Want(http.StatusOK).JSON(&listed)
		if len(listed.Versions) != 3 || listed.Versions[0].Version != "2.0.0" || len(listed.Versions[0].Platforms) != 1 ||
			listed.Versions[0].Platforms[0].OS != runtime.GOOS {
			t.Fatalf("versions: %+v", listed)
		}

		host := strings.TrimPrefix(e.URL, "https://")
		home := clienttest.Home(t)
		cliConfig := filepath.Join(home, "terraform.rc")
		clienttest.WriteFile(t, cliConfig, "credentials \""+host+"\" {\n  token = \""+alice.Token+"\"\n}\n")
		initWith := func(constraint string) (string, error) {
			dir := t.TempDir()
			clienttest.WriteFile(t, filepath.Join(dir, "main.tf"), "terraform {\n  required_providers {\n    greet = {\n      source  = \""+host+
				"/infra/greet\"\n      version = \""+constraint+"\"\n    }\n  }\n}\n")
			return clienttest.TryRun(clienttest.Cmd{Dir: dir, Name: bins["terraform"], Args: []string{"init", "-input=false", "-no-color"},
				Env: []string{"HOME=" + home, "SSL_CERT_FILE=" + e.CertFile, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
					"TF_CLI_CONFIG_FILE=" + cliConfig}})
		}
		out, err := initWith("~> 1.0")
		if err != nil || !strings.Contains(out, "Installed "+host+"/infra/greet v1.1.0") || !strings.Contains(out, release.id) {
			t.Fatalf("terraform init with the provider: %v\n%s", err, out)
		}
		if out, err := initWith("2.0.0"); err == nil || !strings.Contains(out, "signature") {
			t.Fatalf("terraform init of a release signed by a key the repository does not hold: %v\n%s", err, out)
		}
	})
}
