package helm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestHelmRepository: charts packaged by the real helm are uploaded as
// ChartMuseum's push does (multipart "chart") and with a plain PUT; a
// version is not replaced unless forced; `helm repo add` with
// credentials, `helm search repo`, `helm pull` (the digest index.yaml
// gives is the archive's) and `helm template` work; ChartMuseum's
// listing and delete; malformed archives are refused.
func TestHelmRepository(t *testing.T) {
	bins := clienttest.RequireClients(t, "helm")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("charts", "helm", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		home, work := clienttest.Home(t), t.TempDir()
		env := []string{"HOME=" + home, "HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
			"HELM_DATA_HOME=" + filepath.Join(home, "data")}
		helm := func(args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: work, Env: env, Name: bins["helm"], Args: args})
		}
		chart := func(version, greeting string) []byte {
			dir := filepath.Join(work, "src-"+version, "demo")
			clienttest.WriteFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: demo\nversion: "+version+"\nappVersion: \"1.0\"\ndescription: a demo chart\n")
			clienttest.WriteFile(t, filepath.Join(dir, "values.yaml"), "greeting: "+greeting+"\n")
			clienttest.WriteFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n")
			helm("package", dir, "-d", filepath.Join(work, "out"))
			b, err := os.ReadFile(filepath.Join(work, "out", "demo-"+version+".tgz"))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		v1, v2 := chart("0.1.0", "hello"), chart("0.2.0", "bonjour")

		multipartBody := func(archive []byte) (string, []byte) {
			var b bytes.Buffer
			mw := multipart.NewWriter(&b)
			fw, _ := mw.CreateFormFile("chart", "demo.tgz")
			fw.Write(archive)
			mw.Close()
			return mw.FormDataContentType(), b.Bytes()
		}
		ct, body := multipartBody(v1)
		if r := e.DoHeader("POST", "/helm/charts/api/charts", alice.Basic(), body, map[string]string{"Content-Type": ct}).Want(201); string(r.Body) != `{"saved":true}` {
			t.Fatalf("upload answered %s", r.Body)
		}
		e.DoHeader("POST", "/helm/charts/api/charts", alice.Basic(), body, map[string]string{"Content-Type": ct}).Want(409)
		e.Do("POST", "/helm/charts/api/charts?force", alice.Basic(), v1).Want(201)
		e.Do("PUT", "/helm/charts/charts/demo-0.2.0.tgz", alice.Basic(), v2).Want(201)
		e.Do("PUT", "/helm/charts/charts/other-9.9.9.tgz", alice.Basic(), v2).Want(400)
		e.Do("POST", "/helm/charts/api/charts", "", v2).Want(401)
		for what, archive := range map[string][]byte{
			"not gzip'd":      []byte("not a chart"),
			"a path outside":  formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.3.0\n", "demo/../../evil": "x"}),
			"no Chart.yaml":   formattest.Tgz(t, map[string]string{"demo/values.yaml": "a: 1\n"}),
			"no version":      formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\n"}),
			"a name with a /": formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: ../demo\nversion: 0.3.0\n"}),
			"two directories": formattest.Tgz(t, map[string]string{"demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.3.0\n", "other/x": "x"}),
		} {
			if r := e.Do("POST", "/helm/charts/api/charts", alice.Basic(), archive); r.Status != 400 {
				t.Errorf("uploading a chart with %s: %d %s", what, r.Status, r.Body)
			}
		}

		helm("repo", "add", "depot", e.URL+"/helm/charts", "--username", alice.Name, "--password", alice.Token)
		helm("repo", "update")
		if out := helm("search", "repo", "depot/", "--versions"); !strings.Contains(out, "depot/demo\t0.2.0") || !strings.Contains(out, "0.1.0") {
			t.Fatalf("helm search:\n%s", out)
		}
		if err := os.MkdirAll(filepath.Join(work, "pulled"), 0o755); err != nil {
			t.Fatal(err)
		}
		helm("pull", "depot/demo", "--version", "0.1.0", "-d", filepath.Join(work, "pulled"))
		pulled, err := os.ReadFile(filepath.Join(work, "pulled", "demo-0.1.0.tgz"))
		if err != nil || !bytes.Equal(pulled, v1) {
			t.Fatalf("pulled chart differs from the upload: %v", err)
		}
		index := string(e.Do("GET", "/helm/charts/index.yaml", alice.Basic(), nil).Want(200).Body)
		sum := sha256.Sum256(v1)
		if !strings.Contains(index, hex.EncodeToString(sum[:])) || !strings.Contains(index, "contextPath: /helm/charts") {
			t.Fatalf("index.yaml:\n%s", index)
		}
		if out := helm("template", "greet", "depot/demo", "--version", "0.2.0"); !strings.Contains(out, "greeting: bonjour") {
			t.Fatalf("helm template:\n%s", out)
		}

		// Charts as OCI artifacts go to a docker repository.
		ociID := e.CreateRepo("ocicharts", "docker", false)
		e.Grant(ociID, alice.ID, false, "write")
		host := clienttest.HostPort(e)
		helm("registry", "login", host, "--plain-http", "--username", alice.Name, "--password", alice.Token)
		helm("push", filepath.Join(work, "out", "demo-0.2.0.tgz"), "oci://"+host+"/ocicharts", "--plain-http")
		if out := helm("template", "oci", "oci://"+host+"/ocicharts/demo", "--version", "0.2.0", "--plain-http"); !strings.Contains(out, "greeting: bonjour") {
			t.Fatalf("helm template from OCI:\n%s", out)
		}

		var versions []struct{ Version string }
		e.Do("GET", "/helm/charts/api/charts/demo", alice.Basic(), nil).Want(200).JSON(&versions)
		if len(versions) != 2 || versions[0].Version != "0.2.0" {
			t.Fatalf("listing: %+v", versions)
		}
		if r := e.Do("DELETE", "/helm/charts/api/charts/demo/0.1.0", alice.Basic(), nil).Want(200); string(r.Body) != `{"deleted":true}` {
			t.Fatalf("delete answered %s", r.Body)
		}
		var left map[string][]json.RawMessage
		e.Do("GET", "/helm/charts/api/charts", alice.Basic(), nil).Want(200).JSON(&left)
		if len(left["demo"]) != 1 {
			t.Fatalf("after the delete: %v", left)
		}
	})
}
