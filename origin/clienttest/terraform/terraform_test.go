package terraform_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

func start(t *testing.T) *origintest.Env { return origintest.Start(t, origintest.Options{TLS: true}) }

// moduleArchive is a Terraform module (.tar.gz) whose output greeting
// says word.
func moduleArchive(t *testing.T, word string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"main.tf":   "variable \"who\" {\n  default = \"world\"\n}\n\noutput \"greeting\" {\n  value = \"" + word + ", ${var.who}\"\n}\n",
		"README.md": "A greeting.\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// TestTerraformPlugin: the example plugin, built from its source, is
// installed through the API and serves a Terraform module registry:
// module archives are published with PUT (a version once; what is not a
// .tar.gz is refused), and the real terraform, with the registry's
// credentials, finds the registry by service discovery, picks the newest
// version a constraint allows, downloads and applies it; without
// credentials it is refused. A disabled plugin's paths answer 404 and
// come back when it is enabled; an uninstalled one's are gone, and what
// its repository holds stays for when it is installed again.
func TestTerraformPlugin(t *testing.T) {
	bins := clienttest.RequireClients(t, "terraform")
	wasm := plugintest.Example(t, "terraform")
	clienttest.Targets(t, start, func(t *testing.T, e *origintest.Env) {
		var pl struct {
			ID, Version  string
			Formats      []string
			Enabled      bool
			Capabilities []string
			Module       struct{ Digest string }
		}
		e.Do("POST", "/api/v1/plugins", e.Admin, wasm).Want(http.StatusCreated).JSON(&pl)
		if pl.ID != "terraform" || len(pl.Formats) != 1 || pl.Formats[0] != "terraform" || !pl.Enabled || !strings.HasPrefix(pl.Module.Digest, "sha256:") {
			t.Fatalf("installed: %+v", pl)
		}
		repoID := e.CreateRepo("infra", "terraform", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		basic := alice.Basic()
		const mod = "/terraform/modules/v1/infra/greet/null/"
		e.Do("PUT", mod+"1.0.0", basic, moduleArchive(t, "hello")).Want(http.StatusCreated)
		e.Do("PUT", mod+"1.1.0", basic, moduleArchive(t, "bonjour")).Want(http.StatusCreated)
		e.Do("PUT", mod+"2.0.0", basic, moduleArchive(t, "hallo")).Want(http.StatusCreated)
		e.Do("PUT", mod+"1.0.0", basic, moduleArchive(t, "changed")).Want(http.StatusConflict)
		if r := e.Do("PUT", mod+"1.2.0", basic, []byte("not an archive")).Want(http.StatusBadRequest); !strings.Contains(string(r.Body), `"errors"`) {
			t.Fatalf("a refusal in the protocol's error shape: %s", r.Body)
		}
		e.Do("PUT", mod+"1.2.0", "", moduleArchive(t, "x")).Want(http.StatusUnauthorized)
		e.Do("PUT", mod+"not-a-version", basic, moduleArchive(t, "x")).Want(http.StatusBadRequest)
		if r := e.Do("GET", mod+"versions", basic, nil).Want(http.StatusOK); string(r.Body) !=
			`{"modules":[{"versions":[{"version":"2.0.0"},{"version":"1.1.0"},{"version":"1.0.0"}]}]}` {
			t.Fatalf("versions: %s", r.Body)
		}

		// The archive's URL is presigned (Terraform sends no credentials
		// for it): its token reads that repository's files, nothing else.
		r := e.Do("GET", mod+"1.0.0/download", basic, nil).Want(http.StatusNoContent)
		get, err := url.Parse(r.Header.Get("X-Terraform-Get"))
		token := ""
		if err == nil {
			token = get.Query().Get("depot_token")
		}
		if token == "" || !strings.HasPrefix(get.Path, "./greet-null-1.0.0.tar.gz") {
			t.Fatalf("X-Terraform-Get: %q", r.Header.Get("X-Terraform-Get"))
		}
		signed := "?depot_token=" + url.QueryEscape(token)
		e.Do("GET", mod+"1.0.0/greet-null-1.0.0.tar.gz"+signed, "", nil).Want(http.StatusOK)
		e.Do("GET", mod+"1.0.0/greet-null-1.0.0.tar.gz?depot_token=forged", "", nil).Want(http.StatusUnauthorized)
		// (An edge's token is the edge's own: the origin a write goes to
		// does not take it at all.)
		if r := e.Do("PUT", mod+"9.0.0"+signed, "", moduleArchive(t, "x")); r.Status != http.StatusForbidden && r.Status != http.StatusUnauthorized {
			t.Fatalf("a write with a presigned URL's token: %d %s", r.Status, r.Body)
		}
		other := e.CreateRepo("other", "terraform", false)
		e.Grant(other, alice.ID, false, "write")
		e.Do("PUT", "/terraform/modules/v1/other/greet/null/1.0.0", basic, moduleArchive(t, "x")).Want(http.StatusCreated)
		e.Do("GET", "/terraform/modules/v1/other/greet/null/versions"+signed, "", nil).Want(http.StatusForbidden)

		host := strings.TrimPrefix(e.URL, "https://")
		home := clienttest.Home(t)
		cliConfig := filepath.Join(home, "terraform.rc")
		clienttest.WriteFile(t, cliConfig, "credentials \""+host+"\" {\n  token = \""+alice.Token+"\"\n}\n")
		terraform := func(dir string, creds bool, args ...string) (string, error) {
			env := []string{"HOME=" + home, "SSL_CERT_FILE=" + e.CertFile, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
				"TF_CLI_CONFIG_FILE=" + cliConfig}
			if !creds {
				env = []string{"HOME=" + t.TempDir(), "SSL_CERT_FILE=" + e.CertFile, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"}
			}
			return clienttest.TryRun(clienttest.Cmd{Dir: dir, Env: env, Name: bins["terraform"], Args: args})
		}
		root := func(constraint string) string {
			dir := t.TempDir()
			clienttest.WriteFile(t, filepath.Join(dir, "main.tf"), "module \"greet\" {\n  source  = \""+host+"/infra/greet/null\"\n  version = \""+
				constraint+"\"\n  who     = \"depot\"\n}\n\noutput \"greeting\" {\n  value = module.greet.greeting\n}\n")
			return dir
		}
		for _, c := range []struct{ constraint, want string }{{"~> 1.0", "bonjour, depot"}, {"1.0.0", "hello, depot"}} {
			dir := root(c.constraint)
			if out, err := terraform(dir, true, "init", "-input=false", "-no-color"); err != nil {
				t.Fatalf("terraform init (%s): %v\n%s", c.constraint, err, out)
			}
			if out, err := terraform(dir, true, "apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
				t.Fatalf("terraform apply: %v\n%s", err, out)
			}
			if out, err := terraform(dir, true, "output", "-raw", "greeting"); err != nil || out != c.want {
				t.Fatalf("version %s says %q (%v), want %q", c.constraint, out, err, c.want)
			}
		}
		if out, err := terraform(root("~> 1.0"), false, "init", "-input=false", "-no-color"); err == nil || !strings.Contains(out, "401") {
			t.Fatalf("terraform init without credentials: %v\n%s", err, out)
		}

		e.Do("DELETE", mod+"1.1.0", basic, nil).Want(http.StatusNoContent)
		if r := e.Do("GET", mod+"versions", basic, nil).Want(http.StatusOK); string(r.Body) !=
			`{"modules":[{"versions":[{"version":"2.0.0"},{"version":"1.0.0"}]}]}` {
			t.Fatalf("versions after a delete: %s", r.Body)
		}

		e.Do("POST", "/api/v1/plugins/terraform/disable", e.Admin, nil).Want(http.StatusOK)
		if r := e.Do("GET", mod+"versions", basic, nil).Want(http.StatusNotFound); !strings.Contains(string(r.Body), "disabled") {
			t.Fatalf("a disabled plugin's path: %s", r.Body)
		}
		e.Do("POST", "/api/v1/plugins/terraform/enable", e.Admin, nil).Want(http.StatusOK)
		e.Do("GET", mod+"versions", basic, nil).Want(http.StatusOK)

		e.Do("DELETE", "/api/v1/plugins/terraform", e.Admin, nil).Want(http.StatusNoContent)
		e.Do("GET", mod+"versions", basic, nil).Want(http.StatusNotFound)
		e.Do("GET", "/.well-known/terraform.json", "", nil).Want(http.StatusNotFound)
		e.Do("POST", "/api/v1/plugins", e.Admin, wasm).Want(http.StatusCreated)
		if r := e.Do("GET", mod+"versions", basic, nil).Want(http.StatusOK); !strings.Contains(string(r.Body), "2.0.0") {
			t.Fatalf("versions once installed again: %s", r.Body)
		}

		if e.URL != e.Server.URL {
			// Through an edge: the plugin's reads are the edge's own, and
			// go on with the origin away.
			e.Server.Close()
			e.Do("GET", mod+"versions", basic, nil).Want(http.StatusOK)
			dir := root("1.0.0")
			if out, err := terraform(dir, true, "init", "-input=false", "-no-color"); err != nil {
				t.Fatalf("terraform init through the edge, the origin away: %v\n%s", err, out)
			}
		}
	})
}
