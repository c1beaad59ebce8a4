package helm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRESTDelete: a chart version deleted through the REST API leaves
// index.yaml, so after `helm repo update` helm pulls and renders the
// version before it when none is asked for, and asking for the deleted
// one fails with helm's "not found"; the archive is no longer served.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "helm")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("charts", "helm", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		home, work := clienttest.Home(t), t.TempDir()
		env := []string{"HOME=" + home, "HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
			"HELM_DATA_HOME=" + filepath.Join(home, "data")}
		cmd := func(args ...string) clienttest.Cmd {
			return clienttest.Cmd{Dir: work, Env: env, Name: bins["helm"], Args: args}
		}
		helm := func(args ...string) string {
			t.Helper()
			return clienttest.Run(t, cmd(args...))
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			dir := filepath.Join(work, "src-"+v, "demo")
			clienttest.WriteFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: demo\nversion: "+v+"\ndescription: a demo chart\n")
			clienttest.WriteFile(t, filepath.Join(dir, "values.yaml"), "greeting: hello from "+v+"\n")
			clienttest.WriteFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n")
			helm("package", dir, "-d", filepath.Join(work, "out"))
			archive, err := os.ReadFile(filepath.Join(work, "out", "demo-"+v+".tgz"))
			if err != nil {
				t.Fatal(err)
			}
			e.Do("PUT", "/helm/charts/charts/demo-"+v+".tgz", alice.Basic(), archive).Want(201)
		}
		indexed := func() []string {
			t.Helper()
			var index struct {
				Entries map[string][]struct{ Version string } `yaml:"entries"`
			}
			body := e.Do("GET", "/helm/charts/index.yaml", alice.Basic(), nil).Want(200).Body
			if err := yaml.Unmarshal(body, &index); err != nil {
				t.Fatalf("index.yaml: %v\n%s", err, body)
			}
			var vs []string
			for _, c := range index.Entries["demo"] {
				vs = append(vs, c.Version)
			}
			return vs
		}
		if vs := indexed(); len(vs) != 2 {
			t.Fatalf("index.yaml lists %v before the delete", vs)
		}
		// helm's cached index names 1.1.0 before the delete.
		helm("repo", "add", "depot", e.URL+"/helm/charts", "--username", alice.Name, "--password", alice.Token)
		if out := helm("search", "repo", "depot/demo"); !strings.Contains(out, "depot/demo\t1.1.0") {
			t.Fatalf("helm search before the delete:\n%s", out)
		}

		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demo", "1.1.0"), alice.Basic(), nil).Want(204)
		if vs := indexed(); len(vs) != 1 || vs[0] != "1.0.0" {
			t.Fatalf("index.yaml lists %v after deleting 1.1.0", vs)
		}
		e.Do("GET", "/helm/charts/charts/demo-1.1.0.tgz", alice.Basic(), nil).Want(404)

		helm("repo", "update")
		if out := helm("search", "repo", "depot/demo", "--versions"); !strings.Contains(out, "depot/demo\t1.0.0") || strings.Contains(out, "1.1.0") {
			t.Fatalf("helm search after the delete:\n%s", out)
		}
		pulled := filepath.Join(work, "pulled")
		if err := os.MkdirAll(pulled, 0o755); err != nil {
			t.Fatal(err)
		}
		helm("pull", "depot/demo", "-d", pulled)
		if got, _ := filepath.Glob(filepath.Join(pulled, "*.tgz")); len(got) != 1 || filepath.Base(got[0]) != "demo-1.0.0.tgz" {
			t.Fatalf("helm pull without a version got %v", got)
		}
		if out := helm("template", "r", "depot/demo"); !strings.Contains(out, "greeting: hello from 1.0.0") {
			t.Fatalf("helm template without a version:\n%s", out)
		}
		out, err := clienttest.TryRun(cmd("pull", "depot/demo", "--version", "1.1.0", "-d", pulled))
		if err == nil || !strings.Contains(out, "not found") {
			t.Fatalf("helm pull of the deleted 1.1.0: %v\n%s", err, out)
		}
	})
}
