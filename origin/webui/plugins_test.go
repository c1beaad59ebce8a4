package webui_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
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
