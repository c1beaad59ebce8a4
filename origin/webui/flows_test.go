package webui_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

const newAdminPW = "a-new-admin-pw-123"

// curl runs the real curl, as the generic format's users do, and returns
// the HTTP status it got.
func curl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatal("curl is required (DEPOT_REQUIRE_CLIENTS is set)")
		}
		t.Skip("curl not installed")
	}
	out, err := exec.Command(path, append([]string{"-s", "-o", "/dev/null", "-w", "%{http_code}"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v %s", args, err, out)
	}
	return string(out)
}

// TestFirstRunInTheBrowser clicks through what a new administrator does
// first: signs in with the initial password, is made to change it,
// creates a repository (its description shown as text, not markup),
// finds the client setup with this server's address, uploads with curl
// and sees the file with its checksums, makes an API token (its secret
// shown once) that curl then uploads with, revokes it (curl refused),
// and signs out.
func TestFirstRunInTheBrowser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true})
	b := newBrowser(t, e.URL)

	b.do(chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("sign-in")))
	if loc := b.location(); !strings.HasPrefix(loc, e.URL+"/ui/login") {
		t.Fatalf("the server's address led to %s, not the sign-in page", loc)
	}
	b.shot("sign-in")
	b.do(then("#change-password", append(fill("username", "admin", "password", origintest.InitialAdminPassword),
		chromedp.Click(chromedp.ID("sign-in")))...)...)
	b.shot("password-forced")
	// Until the password is changed, every other page leads back here.
	b.open("/ui/repositories")
	if b.count("#change-password") != 1 {
		t.Fatalf("a page opened before the initial password was changed: %s", b.location())
	}
	b.do(then("#new-repository", append(fill("current_password", origintest.InitialAdminPassword, "password", newAdminPW,
		"password_again", newAdminPW), chromedp.Click(chromedp.ID("change-password")))...)...)
	if f := b.text(".flash"); !strings.Contains(f, "password is changed") {
		t.Errorf("after the change: %q", f)
	}
	b.shot("repositories-empty")

	b.do(then("#create-repository", chromedp.Click(chromedp.ID("new-repository")))...)
	b.do(append(fill("name", "files", "description", "<script>alert('x')</script> build outputs"),
		chromedp.SetValue(chromedp.ID("format"), "generic"))...)
	b.shot("repository-new")
	b.do(then(".setup", chromedp.Click(chromedp.ID("create-repository")))...)
	if h := b.text("h1"); !strings.HasPrefix(h, "files") {
		t.Fatalf("after creating: %q", h)
	}
	if d := b.text("main > p:not(.crumbs):not(.meta):not(.flash)"); !strings.Contains(d, "<script>alert('x')</script>") {
		t.Errorf("the description is not shown as text: %q", d)
	}
	setup := b.text(".setup pre")
	if !strings.Contains(setup, e.URL+"/generic/files/") || !strings.Contains(setup, "admin:") {
		t.Errorf("the client setup lacks this server's address or the user: %q", setup)
	}
	b.shot("repository")

	file := filepath.Join(t.TempDir(), "tool.bin")
	content := []byte("the tool, built\n")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := curl(t, "-u", "admin:"+newAdminPW, "-T", file, e.URL+"/generic/files/tool/1.0/tool.bin"); st != "201" {
		t.Fatalf("curl upload: %s", st)
	}
	b.open("/ui/repositories/files")
	b.do(then("article.file", chromedp.Click(chromedp.CSS(`a[href*="version?name=tool"]`)))...)
	sum := sha256.Sum256(content)
	if got := b.text("article.file"); !strings.Contains(got, hex.EncodeToString(sum[:])) || !strings.Contains(got, "by admin") {
		t.Errorf("the file's page: %q", got)
	}
	status, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`fetch(document.querySelector("article.file a").href).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != 200 {
		t.Errorf("the download link: %d %v", status, err)
	}
	b.shot("version")

	b.open("/ui/tokens")
	b.do(append(fill("token-name", "ci upload"), chromedp.Click(chromedp.CSS(`input[name="action_write"]`)))...)
	b.do(then("#new-token", chromedp.Click(chromedp.ID("create-token")))...)
	secret := b.text("#new-token")
	b.shot("token-created")
	if st := curl(t, "-u", "admin:"+secret, "-T", file, e.URL+"/generic/files/tool/2.0/tool.bin"); st != "201" {
		t.Fatalf("curl with the new token: %s", st)
	}
	b.open("/ui/tokens") // the secret is not shown again
	if b.count("#new-token") != 0 || strings.Contains(b.text("main"), secret) {
		t.Fatal("the token's secret is shown again")
	}
	b.do(then(".flash", chromedp.Click(chromedp.CSS(`form[action$="/revoke"] button`)))...)
	if d := b.takeDialogs(); len(d) != 1 || !strings.Contains(d[0], "ci upload") {
		t.Errorf("revoking asked %q", d)
	}
	if st := curl(t, "-u", "admin:"+secret, e.URL+"/generic/files/tool/2.0/tool.bin"); st != "401" {
		t.Fatalf("curl with the revoked token: %s", st)
	}
	b.shot("token-revoked")

	b.open("/ui/api")
	if b.count("article.op") < 50 {
		t.Errorf("the API page shows %d operations", b.count("article.op"))
	}
	b.shot("api")

	b.do(then("#sign-in", chromedp.Click(chromedp.CSS(".who button")))...)
	if f := b.text(".flash"); !strings.Contains(f, "signed out") {
		t.Errorf("after signing out: %q", f)
	}
	b.open("/ui/tokens")
	if b.count("#sign-in") != 1 {
		t.Fatal("a page opened after signing out")
	}
	if d := b.takeDialogs(); len(d) != 0 {
		t.Errorf("unexpected dialogs (markup run as script?): %q", d)
	}
	b.clean()
}

// TestSingleSignOnInTheBrowser: "Login with SSO" on the sign-in page
// goes through the real OpenID provider's login form and back to the
// page asked for, signed in as the provider's user (the display name
// from its claims), and a session that makes API tokens; a user
// disabled at Depot is refused, the reason shown on the sign-in page.
func TestSingleSignOnInTheBrowser(t *testing.T) {
	e := clienttest.StartWithSSO(t)
	b := newBrowser(t, e.URL)
	b.do(chromedp.Navigate(e.URL+"/ui/tokens"), chromedp.WaitVisible(chromedp.ID("sso")))
	b.shot("sign-in-sso")
	b.do(chromedp.Click(chromedp.ID("sso")), chromedp.WaitVisible(chromedp.CSS(`input[name="login"]`)))
	b.do(chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), "alice"), chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"),
		chromedp.Submit(chromedp.CSS(`input[name="login"]`)), chromedp.WaitVisible(chromedp.ID("create-token")))
	if loc := b.location(); loc != e.URL+"/ui/tokens" {
		t.Errorf("after single sign-on: %s", loc)
	}
	if who := b.text(".who"); !strings.Contains(who, "Alice Admin") {
		t.Errorf("signed in as %q", who)
	}
	b.shot("signed-in-sso")
	// The session is the API's: a token made here works with a client.
	b.do(append(fill("token-name", "from sso"), chromedp.Click(chromedp.ID("create-token")), chromedp.WaitVisible(chromedp.ID("new-token")))...)
	secret := b.text("#new-token")
	e.Do("GET", "/api/v1/users/me", "Bearer "+secret, nil).Want(200)

	// Disabled at Depot: the provider's word does not let alice in, and
	// the sign-in page says why.
	e.Do("PUT", "/api/v1/users/alice", e.Admin, map[string]any{"disabled": true}).Want(200)
	b.do(chromedp.Navigate(e.URL+"/ui/login"), chromedp.WaitVisible(chromedp.ID("sso")))
	b.do(chromedp.Click(chromedp.ID("sso")))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#form-error, input[name="login"]`)))
	if b.count(`input[name="login"]`) == 1 { // the provider asks again
		b.do(chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), "alice"), chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"),
			chromedp.Submit(chromedp.CSS(`input[name="login"]`)), chromedp.WaitVisible(chromedp.ID("form-error")))
	}
	if msg := b.text("#form-error"); !strings.Contains(msg, "disabled") || b.count("#sso") != 1 {
		t.Errorf("a disabled user's single sign-on: %q", msg)
	}
	b.shot("sso-refused")
	b.clean()
}

// TestEveryPageForEachRole: an administrator, a user and a viewer each
// open every page of their navigation, and the pages one level below
// them, with no console error and no failed request and a label on every
// control; a user and a viewer
// are offered no administrators' page and get 403 typing one's address.
func TestEveryPageForEachRole(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	repo := e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/t.bin", e.Admin, "x").Want(201)
	for _, who := range []struct{ name, role string }{{"admin", "admin"}, {"uma", "user"}, {"vic", "viewer"}} {
		t.Run(who.role, func(t *testing.T) {
			pw := origintest.AdminPassword
			if who.name != "admin" {
				pw = who.name + "-password-1"
				id := e.CreateUser(who.name, who.role, pw)
				e.Grant(repo, id, false, "read")
			}
			b := newBrowser(t, e.URL)
			b.open("/ui/login")
			b.do(then("header nav", append(fill("username", who.name, "password", pw), chromedp.Click(chromedp.ID("sign-in")))...)...) // the sign-in page has no navigation
			links, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("header nav a")].map(a => a.getAttribute("href"))`))
			if err != nil || len(links) < 4 {
				t.Fatalf("navigation %v %v", links, err)
			}
			admin := false
			for _, l := range links {
				b.open(l)
				b.labelled()
				b.shot(strings.Trim(strings.ReplaceAll(l, "/", "-"), "-"))
				if l == "/ui/users" {
					admin = true
				}
			}
			if admin != (who.role == "admin") {
				t.Errorf("%s offered the administrators' pages: %v", who.role, admin)
			}
			b.open("/ui/repositories/files")
			b.open("/ui/repositories/files/version?name=tool&version=1.0")
			if who.role != "admin" {
				b.open("/ui/users")
				if h := b.text("h1"); !strings.HasPrefix(h, "403") {
					t.Errorf("%s typing the users page's address: %q", who.role, h)
				}
			}
			b.clean()
		})
	}
}

// TestSearchInTheBrowser: typing in the quick search box offers the
// names it completes (the page's script asks as one types), and the
// search answers its table.
func TestSearchInTheBrowser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/toolkit/1.0/toolkit-1.0.bin", e.Admin, "x").Want(201)
	b := newBrowser(t, e.URL)
	b.open("/ui/login")
	b.do(then("header nav", append(fill("username", "admin", "password", origintest.AdminPassword), chromedp.Click(chromedp.ID("sign-in")))...)...)
	b.open("/ui/search")
	b.do(append(fill("q", "too"), chromedp.WaitReady(chromedp.CSS(`#suggestions option[value="toolkit"]`)))...)
	b.do(then("#search-results", chromedp.Click(chromedp.ID("search-quick")))...)
	if got := b.text("#search-results tbody"); !strings.Contains(got, "toolkit") || !strings.Contains(got, "toolkit-1.0.bin") {
		t.Errorf("results: %q", got)
	}
	b.shot("search")
	b.clean()
}

// TestPackageInfoOnItsPage: what an npm package says of itself (its
// description, licence and keywords, read in the background) is on its
// page, the keywords leading to a search.
func TestPackageInfoOnItsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("js", "npm", false)
	tgz := formattest.Tgz(t, map[string]string{"package/package.json": `{"name":"described","version":"1.0.0",` +
		`"description":"A package that says what it is","license":"Apache-2.0","keywords":["explained","demo"]}`})
	e.Do("PUT", "/npm/js/described", e.Admin, formattest.NPMDocument("described", "1.0.0", "latest", tgz)).Want(201)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	var a answer
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if a = p.get("/ui/repositories/js/package?name=described"); strings.Contains(a.body, `id="package-info"`) {
			break
		}
	}
	for _, want := range []string{"A package that says what it is", "<dd>Apache-2.0</dd>", `<a href="/ui/search?q=explained">explained</a>`, "version 1.0.0"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the page lacks %q:\n%.3000s", want, a.body)
		}
	}
}
