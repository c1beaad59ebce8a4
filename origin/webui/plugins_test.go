package webui_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// TestPluginsPage: an administrator sees every format handler as a
// plugin and disables and enables one (its client path refused, then
// served); a user may not open the page.
func TestPluginsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "abc").Want(201)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	page := p.get("/ui/plugins")
	for _, want := range []string{`id="plugin-npm"`, `id="plugin-docker"`, "gradle", "<code>/maven2</code>", "enabled"} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("the plugins page lacks %q:\n%.3000s", want, page.body)
		}
	}
	if a := p.post("/ui/plugins/generic/disable", nil); a.status != 303 {
		t.Fatalf("disable: %d", a.status)
	}
	if r := e.Do("GET", "/generic/files/tool/1.0/a.bin", e.Admin, nil); r.Status != 404 || !strings.Contains(string(r.Body), "disabled") {
		t.Fatalf("a disabled handler's path: %d %s", r.Status, r.Body)
	}
	if page := p.get("/ui/plugins"); !strings.Contains(page.body, "disabled") || !strings.Contains(page.body, "by admin") {
		t.Fatalf("the page after disabling:\n%.3000s", page.body)
	}
	p.post("/ui/plugins/generic/enable", nil)
	e.Do("GET", "/generic/files/tool/1.0/a.bin", e.Admin, nil).Want(200)
	e.Do("POST", "/api/v1/users", e.Admin, map[string]string{"username": "uma", "email": "uma@example.com", "password": "uma-password-1", "role": "user"}).Want(201)
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/plugins"); a.status != 403 {
		t.Errorf("a user's plugins page: %d", a.status)
	}
}

// TestInstallPluginPage: an administrator installs the example plugin
// from the page (a file that is not a module is refused, saying why),
// sees it listed with its module, creates a repository of its format
// and uses its paths, then uninstalls it: its paths go.
func TestInstallPluginPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	p.get("/ui/plugins")
	if a := p.upload("/ui/plugins", p.csrf, "module", "x.wasm", []byte("not a module")); a.status != 303 {
		t.Fatalf("a file that is not a module: %d", a.status)
	}
	if page := p.get("/ui/plugins"); !strings.Contains(page.body, "not a WebAssembly module") {
		t.Fatalf("the refusal is not said:\n%.3000s", page.body)
	}
	if a := p.upload("/ui/plugins", p.csrf, "module", "terraform.wasm", plugintest.Example(t, "terraform")); a.status != 303 {
		t.Fatalf("install: %d %s", a.status, a.body)
	}
	page := p.get("/ui/plugins")
	for _, want := range []string{`id="plugin-terraform"`, "Installed Terraform registry 1.1.0", "installed by admin", "sha256:", "<code>/.well-known/terraform.json</code>", "Uninstall"} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("the plugins page lacks %q:\n%.4000s", want, page.body)
		}
	}
	if page := p.get("/ui/repositories/new"); !strings.Contains(page.body, "<option>terraform</option>") {
		t.Fatalf("the new repository form does not offer the plugin's format:\n%.3000s", page.body)
	}
	e.CreateRepo("infra", "terraform", false)
	e.Do("GET", "/terraform/modules/v1/infra/greet/aws/versions", e.Admin, nil).Want(404)
	host := strings.TrimPrefix(e.URL, "http://")
	if page := p.get("/ui/repositories/infra"); !strings.Contains(page.body, host+"/infra/greet/aws") ||
		!strings.Contains(page.body, e.URL+"/terraform/modules/v1/infra/greet/aws/1.0.0") {
		t.Fatalf("the repository page lacks the plugin's client setup, filled in:\n%.4000s", page.body)
	}
	for _, path := range []string{"/ui/repositories", "/ui/repositories/infra", "/ui/repositories/infra/settings"} {
		if page := p.get(path); page.status != 200 || !strings.Contains(page.body, "infra") {
			t.Fatalf("%s with a repository of the plugin's format: %d\n%.2000s", path, page.status, page.body)
		}
	}
	e.Do("GET", "/.well-known/terraform.json", "", nil).Want(200)
	if a := p.post("/ui/plugins/terraform/uninstall", nil); a.status != 303 {
		t.Fatalf("uninstall: %d", a.status)
	}
	if page := p.get("/ui/plugins"); strings.Contains(page.body, `id="plugin-terraform"`) || !strings.Contains(page.body, "is uninstalled") {
		t.Fatalf("the page after uninstalling:\n%.3000s", page.body)
	}
	e.Do("GET", "/.well-known/terraform.json", "", nil).Want(404)
}
