package webui_test

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
)

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

var revokeButton = regexp.MustCompile(`id="revoke-([^"]+)"`)

// TestAdminPagesAreAdmins: a viewer and a user get 403 on every page of
// users, groups and the list of all grants, read or sent, and see no
// entry for them in the navigation; what they sent changed nothing. A
// repository's permissions page is its readers' too: a reader who does
// not administer it sees no form and is refused a grant; the user who
// made a repository (its admin) grants and revokes there.
func TestAdminPagesAreAdmins(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	shared := e.CreateRepo("shared", "generic", false)
	vera := e.CreateUser("vera", "viewer", "vera-password-1")
	e.Grant(shared, vera, false, "read")
	e.CreateUser("uma", "user", "uma-password-1")
	admin := newForm(t, e.URL)
	admin.signIn("admin", origintest.AdminPassword)
	made := admin.post("/ui/groups", url.Values{"name": {"ops"}})
	if made.status != 303 || !strings.HasPrefix(made.location, "/ui/groups/") {
		t.Fatalf("creating a group: %d %s", made.status, made.body)
	}
	group := made.location
	perm := revokeButton.FindStringSubmatch(admin.get("/ui/permissions").body)
	if perm == nil {
		t.Fatal("the admin's list of grants has no revoke button")
	}
	nav := admin.get("/ui/repositories").body
	for _, entry := range []string{`href="/ui/users"`, `href="/ui/groups"`, `href="/ui/permissions"`} {
		if !strings.Contains(nav, entry) {
			t.Errorf("the admin's navigation lacks %s", entry)
		}
	}

	gets := []string{"/ui/users", "/ui/users/new", "/ui/users/admin", "/ui/users/vera", "/ui/groups", group, "/ui/permissions"}
	posts := map[string]url.Values{
		"/ui/users/new":                          {"username": {"mallory"}, "email": {"m@example.com"}, "role": {"admin"}, "password": {"mallory-pw-123"}},
		"/ui/users/admin/disable":                nil,
		"/ui/users/vera/enable":                  nil,
		"/ui/users/admin/delete":                 {"confirm": {"admin"}},
		"/ui/groups":                             {"name": {"mallorys"}},
		group + "/members":                       {"usernames": {"uma vera"}},
		group + "/members/admin/remove":          nil,
		"/ui/permissions":                        {"repository": {"shared"}, "kind": {"user"}, "grantee": {"uma"}, "action_admin": {"on"}},
		"/ui/permissions/" + perm[1] + "/revoke": nil,
	}
	for _, who := range []struct{ name, pw string }{{"vera", "vera-password-1"}, {"uma", "uma-password-1"}} {
		p := newForm(t, e.URL)
		p.signIn(who.name, who.pw)
		for _, path := range gets {
			if a := p.get(path); a.status != 403 {
				t.Errorf("%s GET %s: %d", who.name, path, a.status)
			}
		}
		for path, form := range posts {
			if a := p.post(path, form); a.status != 403 {
				t.Errorf("%s POST %s: %d", who.name, path, a.status)
			}
		}
		body := p.get("/ui/repositories").body
		for _, entry := range []string{"/ui/users", "/ui/groups", "/ui/permissions"} {
			if strings.Contains(body, entry) {
				t.Errorf("%s's page links to %s", who.name, entry)
			}
		}
	}
	// Nothing they sent was done.
	users := string(e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).Body)
	if strings.Contains(users, "mallory") || strings.Contains(users, `"disabled":true`) {
		t.Errorf("a refused form changed the users: %s", users)
	}
	if g := string(e.Do("GET", "/api/v1/groups", e.Admin, nil).Want(200).Body); strings.Contains(g, "mallorys") || !strings.Contains(g, `"members":[]`) {
		t.Errorf("a refused form changed the groups: %s", g)
	}
	if ps := string(e.Do("GET", "/api/v1/permissions", e.Admin, nil).Want(200).Body); strings.Count(ps, `"id"`) != 1 {
		t.Errorf("a refused form changed the grants: %s", ps)
	}

	// A reader of a repository sees its grants page without forms, and
	// is refused a grant there by the app.
	v := newForm(t, e.URL)
	v.signIn("vera", "vera-password-1")
	a := v.get("/ui/permissions?repository=shared")
	if a.status != 200 || strings.Contains(a.body, `id="grant"`) || strings.Contains(a.body, "revoke-") || !strings.Contains(a.body, "Only the administrators") {
		t.Fatalf("a reader's permissions page of shared: %d\n%s", a.status, a.body)
	}
	if a := v.post("/ui/permissions", url.Values{"for": {"shared"}, "kind": {"user"}, "grantee": {"vera"}, "action_write": {"on"}}); a.status != 403 {
		t.Errorf("a reader granting: %d", a.status)
	}
	if a := v.get("/ui/permissions?repository=elsewhere"); a.status != 404 {
		t.Errorf("the permissions of a repository one may not read: %d", a.status)
	}

	// A repository's admin manages its permissions, not another's.
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.post("/ui/repositories/new", url.Values{"name": {"umas"}, "format": {"generic"}}); a.status != 303 {
		t.Fatalf("uma creating a repository: %d", a.status)
	}
	if !strings.Contains(u.get("/ui/repositories/umas/settings").body, `href="/ui/permissions?repository=umas"`) {
		t.Error("the settings page does not link to the repository's permissions")
	}
	if a := u.post("/ui/permissions", url.Values{"for": {"umas"}, "kind": {"user"}, "grantee": {"vera"}, "action_read": {"on"}}); a.status != 303 || a.location != "/ui/permissions?repository=umas" {
		t.Fatalf("uma granting on her repository: %d %s", a.status, a.body)
	}
	e.Do("GET", "/api/v1/repositories/umas", basic("vera", "vera-password-1"), nil).Want(200)
	page := u.get("/ui/permissions?repository=umas").body
	if !strings.Contains(page, "user vera") {
		t.Errorf("uma's permissions page does not name vera:\n%s", page)
	}
	if n := len(revokeButton.FindAllString(page, -1)); n != 2 { // hers (as the creator) and vera's
		t.Fatalf("uma's permissions page has %d revoke buttons", n)
	}
	if a := u.post("/ui/permissions", url.Values{"for": {"shared"}, "kind": {"user"}, "grantee": {"uma"}, "action_read": {"on"}}); a.status != 404 {
		t.Errorf("uma granting on a repository she may not read: %d", a.status)
	}
	veras := regexp.MustCompile(`id="revoke-([^"]+)"\s+data-confirm="Revoke read on umas from user vera\?`).FindStringSubmatch(page)
	if veras == nil {
		t.Fatalf("no revoke of vera's grant:\n%s", page)
	}
	if a := u.post("/ui/permissions/"+veras[1]+"/revoke", url.Values{"for": {"umas"}}); a.status != 303 {
		t.Fatalf("uma revoking: %d %s", a.status, a.body)
	}
	if r := e.Do("GET", "/api/v1/repositories/umas", basic("vera", "vera-password-1"), nil); r.Status != 404 {
		t.Errorf("vera reads umas after the revoke: %d", r.Status)
	}
}

// TestAdminCreatesUser: a user made on the page signs in with the
// initial password and must change it before anything else; the
// form's refusals come back on it with the field marked and what was
// typed kept, escaped.
func TestAdminCreatesUser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	admin := newForm(t, e.URL)
	admin.signIn("admin", origintest.AdminPassword)
	if a := admin.get("/ui/users/new"); a.status != 200 || !strings.Contains(a.body, "must change it") {
		t.Fatalf("the new user form: %d\n%s", a.status, a.body)
	}
	a := admin.post("/ui/users/new", url.Values{"username": {"carol"}, "email": {"carol@example.com"}, "role": {"user"}, "password": {"carol-initial-1"}})
	if a.status != 303 || a.location != "/ui/users" {
		t.Fatalf("creating carol: %d %s", a.status, a.body)
	}
	list := admin.get("/ui/users")
	if !strings.Contains(list.body, "carol created") || !strings.Contains(list.body, `id="user-carol"`) || !strings.Contains(list.body, "carol@example.com") {
		t.Fatalf("the users after creating carol:\n%s", list.body)
	}
	if d := admin.get("/ui/users/carol"); d.status != 200 || !strings.Contains(d.body, "must change the initial password") {
		t.Errorf("carol's page: %d", d.status)
	}

	carol := newForm(t, e.URL)
	if a := carol.do("POST", "/ui/login", url.Values{"username": {"carol"}, "password": {"carol-initial-1"}}); a.status != 303 || a.location != "/ui/password" {
		t.Fatalf("carol's first sign-in: %d %s", a.status, a.location)
	}
	if a := carol.get("/ui/repositories"); a.status != 303 || a.location != "/ui/password" {
		t.Fatalf("carol before changing her password: %d %s", a.status, a.location)
	}
	if a := carol.get("/ui/password"); !strings.Contains(a.body, "first sign-in") {
		t.Errorf("the forced change does not say why:\n%s", a.body)
	}
	// Her package clients wait too.
	e.Do("GET", "/api/v1/repositories", basic("carol", "carol-initial-1"), nil).WantError(403, "PASSWORD_CHANGE_REQUIRED")
	if a := carol.post("/ui/password", url.Values{"current_password": {"carol-initial-1"}, "password": {"carols-own-pw-2"}, "password_again": {"carols-own-pw-2"}}); a.status != 303 {
		t.Fatalf("carol changing her password: %d %s", a.status, a.body)
	}
	if a := carol.get("/ui/repositories"); a.status != 200 {
		t.Fatalf("carol after the change: %d", a.status)
	}

	for _, c := range []struct {
		form  url.Values
		field string
		code  int
	}{
		{url.Values{"username": {"<b>bad</b>"}, "email": {"x@example.com"}, "role": {"user"}, "password": {"long-enough-1"}}, "username", 400},
		{url.Values{"username": {"carol"}, "email": {"carol2@example.com"}, "role": {"user"}, "password": {"long-enough-1"}}, "username", 409},
		{url.Values{"username": {"dave"}, "email": {"not an address <i>"}, "role": {"user"}, "password": {"long-enough-1"}}, "email", 400},
		{url.Values{"username": {"dave"}, "email": {"dave@example.com"}, "role": {"boss"}, "password": {"long-enough-1"}}, "role", 400},
		{url.Values{"username": {"dave"}, "email": {"dave@example.com"}, "role": {"user"}, "password": {"short"}}, "password", 400},
	} {
		a := admin.post("/ui/users/new", c.form)
		marked := regexp.MustCompile(`name="` + c.field + `"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*name="` + c.field + `"`)
		if a.status != c.code || !marked.MatchString(strings.ReplaceAll(a.body, "\n", " ")) {
			t.Errorf("%v: %d, want %d with %s marked\n%s", c.form, a.status, c.code, c.field, a.body)
		}
		if strings.Contains(a.body, "<b>bad</b>") || strings.Contains(a.body, "<i>") {
			t.Errorf("%v: markup not escaped", c.form)
		}
		if c.field != "email" && !strings.Contains(a.body, `value="`+c.form.Get("email")+`"`) {
			t.Errorf("%v: the email typed is not kept", c.form)
		}
	}
	if r := e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200); strings.Contains(string(r.Body), "dave") {
		t.Error("a refused form made dave")
	}
}

// TestAdminDisablesUser: disabling a user on the page makes their API
// token refused by the API at once and their password refused, and
// says so; enabling lets the password in again (the token stays
// revoked). An administrator cannot disable or delete themselves: the
// app's refusal is shown on the page. Deleting takes the username typed.
func TestAdminDisablesUser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateUser("dora", "user", "dora-password-1")
	token := e.Token(e.Login("dora", "dora-password-1"), []string{"repository:read"}, nil)
	e.Do("GET", "/api/v1/users/me", "Bearer "+token, nil).Want(200)

	admin := newForm(t, e.URL)
	admin.signIn("admin", origintest.AdminPassword)
	list := admin.get("/ui/users").body
	if !strings.Contains(list, `id="disable-dora"`) || !strings.Contains(list, "sessions end and their API tokens are revoked") {
		t.Fatalf("the users page offers no disabling that says what it does:\n%s", list)
	}
	if a := admin.post("/ui/users/dora/disable", nil); a.status != 303 || a.location != "/ui/users" {
		t.Fatalf("disabling dora: %d %s", a.status, a.body)
	}
	list = admin.get("/ui/users").body
	if !strings.Contains(list, "dora is disabled") || !strings.Contains(list, "disabled</strong> by an administrator") || !strings.Contains(list, `id="enable-dora"`) {
		t.Errorf("the users page after disabling dora:\n%s", list)
	}
	e.Do("GET", "/api/v1/users/me", "Bearer "+token, nil).WantError(401, "UNAUTHORIZED")
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "dora", "password": "dora-password-1"}).Want(401)

	// From her own page, back to it.
	if a := admin.post("/ui/users/dora/enable", url.Values{"from": {"user"}}); a.status != 303 || a.location != "/ui/users/dora" {
		t.Fatalf("enabling dora: %d %s", a.status, a.location)
	}
	if d := admin.get("/ui/users/dora").body; !strings.Contains(d, "dora is enabled") || !strings.Contains(d, `id="disable-dora"`) {
		t.Errorf("dora's page after enabling:\n%s", d)
	}
	e.Login("dora", "dora-password-1")
	e.Do("GET", "/api/v1/users/me", "Bearer "+token, nil).WantError(401, "UNAUTHORIZED")

	// Oneself: the app refuses, the page says so.
	if a := admin.post("/ui/users/admin/disable", nil); a.status != 409 || !strings.Contains(a.body, `id="form-error"`) || !strings.Contains(a.body, "cannot disable your own account") {
		t.Errorf("disabling oneself: %d\n%s", a.status, a.body)
	}
	if a := admin.post("/ui/users/admin/delete", url.Values{"confirm": {"admin"}}); a.status != 409 || !strings.Contains(a.body, "cannot delete your own account") {
		t.Errorf("deleting oneself: %d\n%s", a.status, a.body)
	}
	if a := admin.post("/ui/users/dora/delete", url.Values{"confirm": {"Dora"}}); a.status != 400 || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Errorf("a delete not confirmed: %d", a.status)
	}
	if a := admin.post("/ui/users/dora/delete", url.Values{"confirm": {"dora"}}); a.status != 303 || a.location != "/ui/users" {
		t.Fatalf("deleting dora: %d %s", a.status, a.body)
	}
	if list := admin.get("/ui/users").body; strings.Contains(list, `id="user-dora"`) || !strings.Contains(list, "dora deleted") {
		t.Errorf("the users after deleting dora:\n%s", list)
	}
	if a := admin.get("/ui/users/dora"); a.status != 404 {
		t.Errorf("the deleted user's page: %d", a.status)
	}
}

// TestAdminGroupsGrantAccess: a group made on the page, a member added
// by username, and a grant of read on a private repository to the group
// let the member read it through the API and download from it; the
// revoke takes that away. Names and descriptions are shown as text.
func TestAdminGroupsGrantAccess(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("secret", "generic", false)
	e.Do("PUT", "/generic/secret/tool/1.0/tool.bin", e.Admin, "the tool").Want(201)
	e.CreateUser("gus", "user", "gus-password-1")
	gus := basic("gus", "gus-password-1")
	e.Do("GET", "/generic/secret/tool/1.0/tool.bin", gus, nil).Want(404)

	admin := newForm(t, e.URL)
	admin.signIn("admin", origintest.AdminPassword)
	if a := admin.post("/ui/groups", url.Values{"name": {"<b>ops</b>"}}); a.status != 400 || strings.Contains(a.body, "<b>ops</b>") ||
		!strings.Contains(a.body, `value="&lt;b&gt;ops&lt;/b&gt;"`) || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Fatalf("a group name with markup: %d\n%s", a.status, a.body)
	}
	desc := `<script>alert("x")</script> the builders`
	a := admin.post("/ui/groups", url.Values{"name": {"build ops"}, "description": {desc}})
	if a.status != 303 || !strings.HasPrefix(a.location, "/ui/groups/") {
		t.Fatalf("creating a group: %d %s", a.status, a.body)
	}
	group := a.location
	for _, page := range []string{"/ui/groups", group} {
		body := admin.get(page).body
		if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; the builders") {
			t.Errorf("%s shows the description as markup:\n%s", page, body)
		}
	}
	if a := admin.post("/ui/groups", url.Values{"name": {"Build Ops"}}); a.status != 409 || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Errorf("a group name taken: %d", a.status)
	}

	// Members by username; one unknown is refused, what was typed kept.
	if a := admin.post(group+"/members", url.Values{"usernames": {"gus <img src=x>"}}); a.status != 400 || strings.Contains(a.body, "<img") ||
		!strings.Contains(a.body, `value="gus &lt;img src=x&gt;"`) {
		t.Fatalf("an unknown member: %d\n%s", a.status, a.body)
	}
	if a := admin.post(group+"/members", url.Values{"usernames": {"gus"}}); a.status != 303 || a.location != group {
		t.Fatalf("adding gus: %d %s", a.status, a.body)
	}
	if body := admin.get(group).body; !strings.Contains(body, `>gus</a>`) || !strings.Contains(body, "Members (1)") {
		t.Errorf("the group's page after adding gus:\n%s", body)
	}
	if body := admin.get("/ui/groups").body; !strings.Contains(body, "<td>1</td>") {
		t.Errorf("the groups list does not count gus:\n%s", body)
	}
	if body := admin.get("/ui/users/gus").body; !strings.Contains(body, ">build ops</a>") {
		t.Errorf("gus's page does not list the group:\n%s", body)
	}

	// A grant to the group, by its name (the group's page links to the
	// form filled in); refusals on the form.
	if body := admin.get("/ui/permissions?group=build+ops").body; !strings.Contains(body, `value="build ops"`) ||
		!regexp.MustCompile(`value="group" id="grant-kind-group" checked`).MatchString(body) {
		t.Errorf("the grant form from the group's page is not filled in:\n%s", body)
	}
	if a := admin.post("/ui/permissions", url.Values{"repository": {"secret"}, "kind": {"group"}, "grantee": {"<i>nobody</i>"}, "action_read": {"on"}}); a.status != 400 ||
		strings.Contains(a.body, "<i>") || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Errorf("a grant to an unknown group: %d\n%s", a.status, a.body)
	}
	if a := admin.post("/ui/permissions", url.Values{"repository": {"secret"}, "kind": {"group"}, "grantee": {"build ops"}}); a.status != 400 {
		t.Errorf("a grant of nothing: %d", a.status)
	}
	if a := admin.post("/ui/permissions", url.Values{"repository": {"secret"}, "kind": {"group"}, "grantee": {"build ops"}, "action_read": {"on"}}); a.status != 303 || a.location != "/ui/permissions" {
		t.Fatalf("granting the group read: %d %s", a.status, a.body)
	}
	e.Do("GET", "/api/v1/repositories/secret", gus, nil).Want(200)
	if r := e.Do("GET", "/generic/secret/tool/1.0/tool.bin", gus, nil).Want(200); string(r.Body) != "the tool" {
		t.Errorf("gus downloaded %q", r.Body)
	}
	e.Do("PUT", "/generic/secret/tool/2.0/tool.bin", gus, "no").Want(403) // read only
	// Out of the group, out of its grant.
	if a := admin.post(group+"/members/gus/remove", nil); a.status != 303 || a.location != group {
		t.Fatalf("taking gus out: %d %s", a.status, a.body)
	}
	if body := admin.get(group).body; strings.Contains(body, `>gus</a>`) || !strings.Contains(body, "Members (0)") {
		t.Errorf("the group's page after taking gus out:\n%s", body)
	}
	e.Do("GET", "/generic/secret/tool/1.0/tool.bin", gus, nil).Want(404)
	if a := admin.post(group+"/members", url.Values{"usernames": {"gus"}}); a.status != 303 {
		t.Fatalf("adding gus again: %d", a.status)
	}
	g := newForm(t, e.URL)
	g.signIn("gus", "gus-password-1")
	if !strings.Contains(g.get("/ui/repositories").body, ">secret<") {
		t.Error("gus's repositories page lacks secret")
	}

	list := admin.get("/ui/permissions?repository=secret").body
	if !strings.Contains(list, ">build ops</a>") || !strings.Contains(list, "Revoke read on secret from group build ops?") {
		t.Fatalf("the permissions of secret:\n%s", list)
	}
	id := revokeButton.FindStringSubmatch(list)
	if a := admin.post("/ui/permissions/"+id[1]+"/revoke", url.Values{"for": {"secret"}}); a.status != 303 || a.location != "/ui/permissions?repository=secret" {
		t.Fatalf("revoking: %d %s", a.status, a.body)
	}
	if body := admin.get("/ui/permissions?repository=secret").body; !strings.Contains(body, "revoked") || revokeButton.MatchString(body) {
		t.Errorf("the permissions of secret after the revoke:\n%s", body)
	}
	e.Do("GET", "/generic/secret/tool/1.0/tool.bin", gus, nil).Want(404)
	e.Do("GET", "/api/v1/repositories/secret", gus, nil).Want(404)
}

// TestAdministrationInTheBrowser clicks through an administrator's
// round: opens Users, creates a user, disables them (the confirmation
// says what it does) and enables them again, creates a group and adds
// the user, grants the group read on a private repository from the
// repository's settings, and signs out; the new user then signs in in
// the same browser, changes the initial password and finds the
// repository in their list.
func TestAdministrationInTheBrowser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("private-bin", "generic", false)
	e.CreateRepo("other-bin", "generic", false)
	b := newBrowser(t, e.URL)

	b.open("/ui/login")
	b.do(then("#new-repository", append(fill("username", "admin", "password", origintest.AdminPassword),
		chromedp.Click(chromedp.ID("sign-in")))...)...)
	b.do(then("#new-user", chromedp.Click(chromedp.CSS(`nav a[href="/ui/users"]`)))...)
	if cur := b.text(`nav a[aria-current="page"]`); cur != "Users" {
		t.Errorf("the navigation marks %q", cur)
	}
	b.shot("users")
	b.do(then("#create-user", chromedp.Click(chromedp.ID("new-user")))...)
	b.do(fill("username", "nina", "email", "nina@example.com", "initial-password", "nina-initial-1")...)
	b.do(chromedp.SetValue(chromedp.ID("role"), "user"))
	b.shot("user-new")
	b.do(then("#disable-nina", chromedp.Click(chromedp.ID("create-user")))...)
	if f := b.text(".flash"); !strings.Contains(f, "nina created") {
		t.Errorf("after creating: %q", f)
	}
	if row := b.text("#user-nina"); !strings.Contains(row, "nina@example.com") || !strings.Contains(row, "active") || !strings.Contains(row, "local") {
		t.Errorf("nina's row: %q", row)
	}
	b.shot("user-created")

	b.do(then("#enable-nina", chromedp.Click(chromedp.ID("disable-nina")))...)
	if d := b.takeDialogs(); len(d) != 1 || !strings.Contains(d[0], "Disable nina?") || !strings.Contains(d[0], "sessions end") || !strings.Contains(d[0], "tokens are revoked") {
		t.Errorf("disabling asked %q", d)
	}
	if row := b.text("#user-nina"); !strings.Contains(row, "disabled by an administrator") {
		t.Errorf("nina's row once disabled: %q", row)
	}
	b.shot("user-disabled")
	b.do(then("#disable-nina", chromedp.Click(chromedp.ID("enable-nina")))...)
	if f := b.text(".flash"); !strings.Contains(f, "nina is enabled") {
		t.Errorf("after enabling: %q", f)
	}
	if d := b.takeDialogs(); len(d) != 0 {
		t.Errorf("enabling asked %q", d)
	}
	b.do(then("#delete-user", chromedp.Click(chromedp.CSS(`#user-nina a[href="/ui/users/nina"]`)))...)
	b.shot("user")

	b.do(then("#create-group", chromedp.Click(chromedp.CSS(`nav a[href="/ui/groups"]`)))...)
	b.do(fill("group-name", "builders", "group-description", "<em>CI</em> and release people")...)
	b.shot("groups")
	b.do(then("#member-usernames", chromedp.Click(chromedp.ID("create-group")))...)
	if h := b.text("h1"); h != "builders" {
		t.Errorf("the group's page: %q", h)
	}
	b.do(then("#members", append(fill("member-usernames", "nina"), chromedp.Click(chromedp.ID("add-members")))...)...)
	if m := b.text("#members"); !strings.Contains(m, "nina") {
		t.Errorf("the members: %q", m)
	}
	if d := b.text("main"); !strings.Contains(d, "<em>CI</em> and release people") {
		t.Errorf("the description is not shown as text: %q", d)
	}
	b.shot("group")

	b.open("/ui/repositories/private-bin/settings")
	b.do(then("#grant", chromedp.Click(chromedp.ID("repository-permissions")))...)
	b.do(append(fill("grant-grantee", "builders"), chromedp.Click(chromedp.ID("grant-kind-group")))...)
	b.shot("permissions-new")
	b.do(then("#grants", chromedp.Click(chromedp.ID("grant")))...)
	if g := b.text("#grants"); !strings.Contains(g, "group builders") || !strings.Contains(g, "read") {
		t.Errorf("the grants of private-bin: %q", g)
	}
	b.shot("permissions")
	b.open("/ui/permissions")
	if g := b.text("#grants"); !strings.Contains(g, "private-bin") || !strings.Contains(g, "group builders") {
		t.Errorf("every grant: %q", g)
	}
	b.shot("permissions-all")
	b.do(then("#sign-in", chromedp.Click(chromedp.CSS(".who button")))...)

	b.do(then("#change-password", append(fill("username", "nina", "password", "nina-initial-1"),
		chromedp.Click(chromedp.ID("sign-in")))...)...)
	if n := b.text(".notice"); !strings.Contains(n, "first sign-in") {
		t.Errorf("the forced change says %q", n)
	}
	if b.count("nav") != 0 {
		t.Error("navigation is offered before the initial password is changed")
	}
	b.shot("user-password-forced")
	b.do(then("main table", append(fill("current_password", "nina-initial-1", "password", "ninas-own-pw-2", "password_again", "ninas-own-pw-2"),
		chromedp.Click(chromedp.ID("change-password")))...)...)
	list := b.text("main table")
	if !strings.Contains(list, "private-bin") || strings.Contains(list, "other-bin") {
		t.Errorf("nina's repositories: %q", list)
	}
	if b.count(`nav a[href="/ui/users"]`) != 0 {
		t.Error("nina is offered the users page")
	}
	b.shot("user-repositories")
	if d := b.takeDialogs(); len(d) != 0 {
		t.Errorf("unexpected dialogs (markup run as script?): %q", d)
	}
	b.clean()
}

// TestSettingsPage: an administrator sees every setting with its source,
// saves the ones changed (the others stay default), brings one back to
// its default, and a value out of bounds comes back marked; others may
// not open the page.
func TestSettingsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/settings")
	if a.status != 200 || !strings.Contains(a.body, `<code>repositories.default_public</code>`) || !strings.Contains(a.body, `name="webhooks.retry_backoff"`) {
		t.Fatalf("the page: %d\n%.3000s", a.status, a.body)
	}
	form := url.Values{"repositories.users_create": {"on"}, "repositories.default_public": {"on"}, "webhooks.enabled": {"on"},
		"rate_limit.api": {"0"}, "rate_limit.login": {"1000"}, "rate_limit.window_seconds": {"60"}, "webhooks.timeout_seconds": {"30"},
		"webhooks.max_retries": {"5"}, "webhooks.retry_backoff": {"linear"}, "webhooks.rate_limit": {"600"},
		"backups.interval_hours": {"0"}, "backups.keep": {"7"}, "backups.include_artifacts": {"on"}, "backups.export_directory": {""},
		"retention.interval_hours": {"24"}, "retention.keep_last": {"0"}, "retention.older_than_days": {"0"}, "retention.keep_downloaded_days": {"0"},
		"security.scan_on_upload": {"on"}}
	if a := p.post("/ui/settings", form); a.status != 303 {
		t.Fatalf("save: %d %s", a.status, a.body)
	}
	a = p.get("/ui/settings")
	if !strings.Contains(a.body, "Saved: repositories.default_public, webhooks.retry_backoff.") {
		t.Errorf("the flash names what changed:\n%.3000s", a.body)
	}
	var got struct{ Values map[string]any }
	e.Do("GET", "/api/v1/admin/settings", e.Admin, nil).Want(200).JSON(&got)
	if got.Values["repositories.default_public"] != true || got.Values["webhooks.retry_backoff"] != "linear" || got.Values["rate_limit.api"] != float64(0) {
		t.Errorf("after saving: %v", got.Values)
	}
	if a := p.post("/ui/settings", url.Values{"reset": {"webhooks.retry_backoff"}}); a.status != 303 {
		t.Fatalf("reset: %d", a.status)
	}
	e.Do("GET", "/api/v1/admin/settings", e.Admin, nil).Want(200).JSON(&got)
	if got.Values["webhooks.retry_backoff"] != "exponential" || got.Values["repositories.default_public"] != true {
		t.Errorf("after the reset: %v", got.Values)
	}
	form.Set("webhooks.max_retries", "1000")
	if a := p.post("/ui/settings", form); a.status != 400 || !strings.Contains(a.body, `name="webhooks.max_retries" value="5" min="0" max="100"`) ||
		!strings.Contains(a.body, "must be an integer from 0 to 100") {
		t.Errorf("out of bounds: %d\n%.4000s", a.status, a.body)
	}
	e.CreateUser("uma", "user", "uma-password-1")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/settings"); a.status != 403 {
		t.Errorf("a user: %d", a.status)
	}
}

// TestBackupsPage: an administrator backs up from the page, which
// refreshes itself while the backup runs and then offers its download,
// its restore and its deletion; others may not open it.
func TestBackupsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "abc").Want(201)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	if a := p.get("/ui/backups"); a.status != 200 || !strings.Contains(a.body, "No backup yet.") {
		t.Fatalf("the empty page: %d\n%.2000s", a.status, a.body)
	}
	if a := p.post("/ui/backups", url.Values{"description": {"from the page"}, "include_artifacts": {"on"}}); a.status != 303 {
		t.Fatalf("back up: %d %s", a.status, a.body)
	}
	var a answer
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if a = p.get("/ui/backups"); strings.Contains(a.body, ">completed<") {
			break
		}
	}
	if !strings.Contains(a.body, "from the page") || !strings.Contains(a.body, "with files") || a.header.Get("Refresh") != "" {
		t.Fatalf("the completed backup:\n%.3000s", a.body)
	}
	m := regexp.MustCompile(`href="/ui/backups/([0-9a-f]+)/download"`).FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no download link:\n%.3000s", a.body)
	}
	if d := p.get("/ui/backups/" + m[1] + "/download"); d.status != 200 || d.header.Get("Content-Type") != "application/zstd" || len(d.body) == 0 {
		t.Errorf("download: %d %s", d.status, d.header)
	}
	if d := p.post("/ui/backups/"+m[1]+"/delete", nil); d.status != 303 {
		t.Errorf("delete: %d", d.status)
	}
	if a := p.get("/ui/backups"); !strings.Contains(a.body, "No backup yet.") {
		t.Errorf("after the delete:\n%.2000s", a.body)
	}
	e.CreateUser("uma", "user", "uma-password-1")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/backups"); a.status != 403 {
		t.Errorf("a user: %d", a.status)
	}
}

// TestCleanupPage: a repository's administrator sets its own retention
// rule on its settings page (a bad number refused on the form), and an
// administrator previews on the cleanup page what the rules would delete,
// then cleans up: the versions go, and the page says what went and the
// last run; a user may not open it; the default rule comes back.
func TestCleanupPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	for _, v := range []string{"1", "2", "3"} {
		e.Do("PUT", "/generic/files/tool/"+v+"/a.bin", e.Admin, "bytes of "+v).Want(201)
	}
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	if a := p.get("/ui/repositories/files/settings"); !strings.Contains(a.body, "The default rule: keep everything") {
		t.Fatalf("the settings page:\n%.3000s", a.body)
	}
	bad := p.post("/ui/repositories/files/retention", url.Values{"rule": {"own"}, "keep_last": {"-2"}})
	if bad.status != 400 || !strings.Contains(bad.body, "keep_last must be") || !strings.Contains(bad.body, `value="-2"`) {
		t.Fatalf("a bad rule: %d\n%.3000s", bad.status, bad.body)
	}
	if a := p.post("/ui/repositories/files/retention", url.Values{"rule": {"own"}, "keep_last": {"1"}}); a.status != 303 {
		t.Fatalf("saving the rule: %d %s", a.status, a.body)
	}
	var r struct {
		Retention *struct {
			KeepLast int `json:"keep_last"`
		}
	}
	e.Do("GET", "/api/v1/repositories/files", e.Admin, nil).Want(200).JSON(&r)
	if r.Retention == nil || r.Retention.KeepLast != 1 {
		t.Fatalf("the rule saved: %+v", r.Retention)
	}
	if a := p.get("/ui/cleanup"); a.status != 200 || !strings.Contains(a.body, "have not deleted anything yet") {
		t.Fatalf("the cleanup page: %d\n%.3000s", a.status, a.body)
	}
	preview := p.post("/ui/cleanup", url.Values{"action": {"preview"}})
	if preview.status != 200 || !strings.Contains(preview.body, "What the rules would delete") ||
		strings.Count(preview.body, "<code>1</code>")+strings.Count(preview.body, "<code>2</code>") != 2 || strings.Contains(preview.body, `id="gc-result"`) {
		t.Fatalf("the preview:\n%.4000s", preview.body)
	}
	run := p.post("/ui/cleanup", url.Values{"action": {"run"}})
	if run.status != 200 || !strings.Contains(run.body, "What the rules deleted") || !strings.Contains(run.body, `id="gc-result"`) ||
		!strings.Contains(run.body, "by admin") {
		t.Fatalf("the run:\n%.4000s", run.body)
	}
	for v, code := range map[string]int{"1": 404, "2": 404, "3": 200} {
		e.Do("GET", "/generic/files/tool/"+v+"/a.bin", e.Admin, nil).Want(code)
	}
	if a := p.post("/ui/repositories/files/retention", url.Values{"rule": {"default"}}); a.status != 303 {
		t.Fatalf("back to the default: %d", a.status)
	}
	e.Do("GET", "/api/v1/repositories/files", e.Admin, nil).Want(200).JSON(&r)
	if r.Retention != nil {
		t.Errorf("the rule is kept: %+v", r.Retention)
	}
	e.CreateUser("uma", "user", "uma-password-1")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.post("/ui/cleanup", url.Values{"action": {"run"}}); a.status != 403 {
		t.Errorf("a user cleaning up: %d", a.status)
	}
}

// TestSecurityPages: a user asks for a scan from a version's page and
// reads its report (a generic file: not covered, said so); an
// administrator creates a policy on its form (a bad expiry refused with
// the field marked), sees it listed, changes its allow-list and deletes
// it; a user may not open the policy form.
func TestSecurityPages(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	var art struct{ ID string }
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "abc").Want(201).JSON(&art)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	if a := p.get("/ui/security"); a.status != 200 || !strings.Contains(a.body, "No advisories are loaded yet") || !strings.Contains(a.body, "No policy") {
		t.Fatalf("the page: %d\n%.3000s", a.status, a.body)
	}
	e.Do("PUT", "/api/v1/artifacts/"+art.ID+"/properties", e.Admin, map[string]any{"properties": map[string]any{"build.number": "42", "qa": []string{"a", "<b>"}}}).Want(200)
	if v := p.get("/ui/repositories/files/version?name=tool&version=1.0"); !strings.Contains(v.body, "Scan for vulnerabilities") ||
		!strings.Contains(v.body, "<code>build.number</code> = <code>42</code>") || !strings.Contains(v.body, "<code>a</code>, <code>&lt;b&gt;</code>") {
		t.Fatalf("the version page offers no scan or lacks the file's properties:\n%.3000s", v.body)
	}
	a := p.post("/ui/security/scans", url.Values{"artifact_id": {art.ID}})
	if a.status != 303 || !strings.HasPrefix(a.header.Get("Location"), "/ui/security/scans/") {
		t.Fatalf("scan: %d %s", a.status, a.header.Get("Location"))
	}
	var page answer
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if page = p.get(a.header.Get("Location")); strings.Contains(page.body, "completed") {
			break
		}
	}
	if !strings.Contains(page.body, "no advisory data covers generic packages") || !strings.Contains(page.body, "No known vulnerability") {
		t.Fatalf("the report:\n%.3000s", page.body)
	}

	// Advisories uploaded from the page: the token first, an
	// administrator's session.
	record := []byte(`{"schema_version":"1.6.0","id":"TEST-1","modified":"2026-01-01T00:00:00Z","summary":"a test advisory",
		"affected":[{"package":{"ecosystem":"npm","name":"left-pad"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"2.0.0"}]}]}]}`)
	if a := p.upload("/ui/security/advisories", "", "advisories", "one.json", record); a.status != 403 {
		t.Errorf("an upload without the token: %d", a.status)
	}
	if a := p.upload("/ui/security/advisories", "not-the-token", "advisories", "one.json", record); a.status != 403 {
		t.Errorf("an upload with another token: %d", a.status)
	}
	if a := p.upload("/ui/security/advisories", p.csrf, "advisories", "one.json", []byte("{not osv")); a.status != 303 {
		t.Errorf("a file that is not OSV: %d", a.status)
	}
	if a := p.get("/ui/security"); !strings.Contains(a.body, "No advisories are loaded yet") || !strings.Contains(a.body, "not an OSV record") {
		t.Errorf("after a refused file, the page says:\n%.3000s", a.body)
	}
	if a := p.upload("/ui/security/advisories", p.csrf, "advisories", "one.json", record); a.status != 303 {
		t.Fatalf("the upload: %d %s", a.status, a.body)
	}
	if a := p.get("/ui/security"); !strings.Contains(a.body, "Loaded one.json: 1 records read, 1 new") || !strings.Contains(a.body, "1 advisories, 1 npm") {
		t.Errorf("after the upload:\n%.3000s", a.body)
	}

	form := url.Values{"name": {"no highs"}, "enabled": {"on"}, "formats": {"npm"}, "severity_threshold": {"high"},
		"block_download": {"on"}, "allowlist": {"GHSA-x | reviewed | 27-01-2027"}}
	bad := p.post("/ui/security/policies/new", form)
	if bad.status != 400 || !strings.Contains(bad.body, "an expiry is a date") || !strings.Contains(bad.body, `value="no highs"`) {
		t.Fatalf("a bad expiry: %d\n%.3000s", bad.status, bad.body)
	}
	form.Set("allowlist", "GHSA-x | reviewed | 2027-01-27")
	if a := p.post("/ui/security/policies/new", form); a.status != 303 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	var list struct {
		Policies []struct {
			ID    string
			Rules struct {
				Allowlist []struct{ ID, Reason string } `json:"allowlist"`
			}
		}
	}
	e.Do("GET", "/api/v1/security/policies", e.Admin, nil).Want(200).JSON(&list)
	if len(list.Policies) != 1 || len(list.Policies[0].Rules.Allowlist) != 1 || list.Policies[0].Rules.Allowlist[0].Reason != "reviewed" {
		t.Fatalf("the policy: %+v", list)
	}
	id := list.Policies[0].ID
	if a := p.get("/ui/security"); !strings.Contains(a.body, "no highs") || !strings.Contains(a.body, "downloads of findings at or above high") {
		t.Errorf("the list:\n%.3000s", a.body)
	}
	if edit := p.get("/ui/security/policies/" + id); !strings.Contains(edit.body, "GHSA-x | reviewed | 2027-01-27") {
		t.Errorf("the edit form:\n%.3000s", edit.body)
	}
	form.Set("allowlist", "")
	if a := p.post("/ui/security/policies/"+id, form); a.status != 303 {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	e.Do("GET", "/api/v1/security/policies", e.Admin, nil).Want(200).JSON(&list)
	if len(list.Policies[0].Rules.Allowlist) != 0 {
		t.Errorf("the allow-list after the edit: %+v", list.Policies[0].Rules)
	}
	e.CreateUser("uma", "user", "uma-password-1")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/security/policies/new"); a.status != 403 {
		t.Errorf("a user opening the policy form: %d", a.status)
	}
	if a := u.get("/ui/security"); a.status != 200 || strings.Contains(a.body, "New policy") || strings.Contains(a.body, "load-advisories") {
		t.Errorf("a user's security page: %d", a.status)
	}
	if a := u.upload("/ui/security/advisories", u.csrf, "advisories", "one.json", record); a.status != 403 {
		t.Errorf("a user's upload: %d", a.status)
	}
	if a := p.post("/ui/security/policies/"+id+"/delete", nil); a.status != 303 {
		t.Errorf("delete: %d", a.status)
	}
	e.Do("GET", "/api/v1/security/policies/"+id, e.Admin, nil).Want(404)
}

// TestMigrationsPage: an administrator migrates a repository of an
// Artifactory from the page (the source checked first: a wrong password
// comes back on the form), follows it to its end on its own page with
// its log and report; a user may not open the page.
func TestMigrationsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "tools")
	af.Put("files", "tool/1.0/tool.bin", artifactorytest.File{Data: []byte("bytes")})
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	if a := p.get("/ui/migrations"); a.status != 200 || !strings.Contains(a.body, "No migration yet") {
		t.Fatalf("the page: %d\n%.2000s", a.status, a.body)
	}
	form := url.Values{"url": {af.BaseURL()}, "username": {"af"}, "password": {"wrong"}, "repositories": {"files"}}
	if a := p.post("/ui/migrations", form); a.status != 400 || !strings.Contains(a.body, "refused the credentials") || !strings.Contains(a.body, `value="files"`) {
		t.Fatalf("a wrong password: %d\n%.3000s", a.status, a.body)
	}
	form.Set("password", "pw")
	a := p.post("/ui/migrations", form)
	if a.status != 303 || !strings.HasPrefix(a.location, "/ui/migrations/") {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	var page answer
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if page = p.get(a.location); strings.Contains(page.body, `id="migration-report"`) {
			break
		}
	}
	if !strings.Contains(page.body, "completed") || !strings.Contains(page.body, "1 checksums verified") || !strings.Contains(page.body, "migrating into files") {
		t.Fatalf("the migration's page:\n%.4000s", page.body)
	}
	e.CreateUser("uma", "user", "uma-password-1")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/migrations"); a.status != 403 {
		t.Errorf("a user opening the migrations: %d", a.status)
	}
}
