package webui_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// form is a browser without script: it keeps cookies and does not follow
// redirects, so each answer can be looked at.
type form struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newForm(t *testing.T, base string) *form {
	jar, _ := cookiejar.New(nil)
	return &form{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type answer struct {
	status   int
	location string
	header   http.Header
	body     string
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (p *form) do(method, path string, form url.Values, header ...string) answer {
	p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, p.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindStringSubmatch(string(b)); m != nil {
		p.csrf = m[1]
	}
	return answer{resp.StatusCode, resp.Header.Get("Location"), resp.Header, string(b)}
}

func (p *form) get(path string) answer { p.t.Helper(); return p.do("GET", path, nil) }

// post sends a form with the session's token.
func (p *form) post(path string, form url.Values, header ...string) answer {
	p.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if form.Get("_csrf") == "" {
		form.Set("_csrf", p.csrf)
	}
	return p.do("POST", path, form, header...)
}

// upload posts a file as a browser sends a form with a file field: the
// parts in order, the token first unless token is "" (and then none).
func (p *form) upload(path, token, field, filename string, data []byte) answer {
	p.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if token != "" {
		mw.WriteField("_csrf", token)
	}
	fw, _ := mw.CreateFormFile(field, filename)
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", p.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Location"), resp.Header, string(b)}
}

func (p *form) signIn(user, pw string) {
	p.t.Helper()
	if a := p.do("POST", "/ui/login", url.Values{"username": {user}, "password": {pw}}); a.status != 303 {
		p.t.Fatalf("signing in %s: %d %s", user, a.status, a.body)
	}
	p.get("/ui/repositories") // for the form token
}

// TestPagesAreGuarded: a page wants a session (the sign-in page comes
// back to it), the server's address leads to the pages, and every answer
// carries the content policy; no page has inline script, inline style or
// an inline event handler, and the first page with what it loads stays
// under 200 KB.
func TestPagesAreGuarded(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	p := newForm(t, e.URL)
	if a := p.get("/"); a.status != 302 || a.location != "/ui/" {
		t.Fatalf("GET /: %d %s", a.status, a.location)
	}
	if a := p.get("/ui/repositories?format=npm"); a.status != 303 || a.location != "/ui/login?next=%2Fui%2Frepositories%3Fformat%3Dnpm" {
		t.Fatalf("a page without a session: %d %s", a.status, a.location)
	}
	// A sign-in returns to the page asked for, never to another site.
	for next, want := range map[string]string{"/ui/tokens": "/ui/tokens", "https://evil.example/": "/ui/", "//evil.example/ui/": "/ui/", "/api/v1/users": "/ui/"} {
		q := newForm(t, e.URL)
		a := q.do("POST", "/ui/login", url.Values{"username": {"admin"}, "password": {origintest.AdminPassword}, "next": {next}})
		if a.status != 303 || a.location != want {
			t.Errorf("next %q: %d %q, want %q", next, a.status, a.location, want)
		}
	}
	if a := p.do("POST", "/ui/login", url.Values{"username": {"admin"}, "password": {"wrong"}}); a.status != 401 || !strings.Contains(a.body, "not right") {
		t.Fatalf("a wrong password: %d", a.status)
	}
	p.signIn("admin", origintest.AdminPassword)
	e.CreateRepo("files", "generic", false)

	size := 0
	group := p.post("/ui/groups", url.Values{"name": {"ops"}}).location
	for _, path := range []string{"/ui/login", "/ui/repositories", "/ui/repositories/new", "/ui/repositories/files", "/ui/repositories/files/settings", "/ui/tokens", "/ui/password", "/ui/api", "/ui/search", "/ui/search?checksum=00", "/ui/nowhere",
		"/ui/settings/webhooks", "/ui/settings/webhooks/new", "/ui/edges", "/ui/cluster", "/ui/users", "/ui/users/new", "/ui/users/admin", "/ui/groups", group, "/ui/permissions", "/ui/permissions?repository=files"} {
		a := p.get(path)
		csp := a.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: policy %q", path, csp)
		}
		if a.header.Get("X-Frame-Options") != "DENY" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: headers %v", path, a.header)
		}
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(a.body, -1) {
			if !strings.Contains(tag, ` src="/ui/static/`) {
				t.Errorf("%s has an inline script: %s", path, tag)
			}
		}
		for _, bad := range []*regexp.Regexp{regexp.MustCompile(`<script[^>]*>[^<]`),
			regexp.MustCompile(`\son[a-z]+=`), regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`<style`), regexp.MustCompile(`(?:src|href)="(?:https?:)?//`)} {
			if bad.MatchString(a.body) {
				t.Errorf("%s has %s: %s", path, bad, bad.FindString(a.body))
			}
		}
		if path == "/ui/nowhere" && a.status != 404 {
			t.Errorf("an unknown page: %d", a.status)
		}
		if path == "/ui/login" {
			size += len(a.body)
		}
	}
	for _, asset := range regexp.MustCompile(`(?:src|href)="(/ui/static/[^"]+)"`).FindAllStringSubmatch(p.get("/ui/login").body, -1) {
		a := p.get(asset[1])
		if a.status != 200 || !strings.Contains(a.header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d %q", asset[1], a.status, a.header.Get("Cache-Control"))
		}
		size += len(a.body)
	}
	if size > 200<<10 {
		t.Errorf("the sign-in page with what it loads is %d bytes", size)
	}
}

// TestFormsRefuseOtherSites: a form without the session's token, with
// another site's Origin, or sent cross-site changes nothing; with them
// it does.
func TestFormsRefuseOtherSites(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	made := func() url.Values { return url.Values{"name": {"made"}, "format": {"generic"}} }
	refusals := []answer{
		p.do("POST", "/ui/repositories/new", made()),
		p.post("/ui/repositories/new", url.Values{"_csrf": {"forged"}, "name": {"made"}, "format": {"generic"}}),
		p.post("/ui/repositories/new", made(), "Origin", "https://evil.example"),
		p.post("/ui/repositories/new", made(), "Sec-Fetch-Site", "cross-site"),
	}
	for i, a := range refusals {
		if a.status != 403 {
			t.Errorf("refusal %d: %d", i, a.status)
		}
	}
	if r := e.Do("GET", "/api/v1/repositories/made", e.Admin, nil); r.Status != 404 {
		t.Fatalf("a refused form made the repository: %d", r.Status)
	}
	// Another session's token is not this one's.
	other := newForm(t, e.URL)
	other.signIn("admin", origintest.AdminPassword)
	if a := p.post("/ui/repositories/new", url.Values{"_csrf": {other.csrf}, "name": {"made"}, "format": {"generic"}}); a.status != 403 {
		t.Errorf("another session's token: %d", a.status)
	}
	if a := p.post("/ui/repositories/new", made(), "Origin", e.URL, "Sec-Fetch-Site", "same-origin"); a.status != 303 {
		t.Fatalf("a form of this site: %d %s", a.status, a.body)
	}
	e.Do("GET", "/api/v1/repositories/made", e.Admin, nil).Want(200)
	// Signing out ends the session: its cookies open nothing any more.
	if a := p.post("/ui/logout", nil); a.status != 303 {
		t.Fatalf("sign out: %d", a.status)
	}
	if a := p.get("/ui/repositories"); a.status != 303 {
		t.Fatalf("after signing out: %d", a.status)
	}
}

// TestRolesSeeTheirOwn: a viewer reads the repositories granted to it
// and no other (not found, as the API says), is offered no creation and
// is refused one; a user's form errors come back on the form with the
// field marked, and what they typed kept.
func TestRolesSeeTheirOwn(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	shared := e.CreateRepo("shared", "generic", false)
	e.CreateRepo("secret", "generic", false)
	viewer := e.CreateUser("vera", "viewer", "vera-password-1")
	e.Grant(shared, viewer, false, "read")
	e.CreateUser("uma", "user", "uma-password-1")

	v := newForm(t, e.URL)
	v.signIn("vera", "vera-password-1")
	list := v.get("/ui/repositories")
	if !strings.Contains(list.body, ">shared<") || strings.Contains(list.body, "secret") || strings.Contains(list.body, "new-repository") {
		t.Fatalf("the viewer's list:\n%s", list.body)
	}
	if a := v.get("/ui/repositories/secret"); a.status != 404 {
		t.Errorf("another repository: %d", a.status)
	}
	if a := v.post("/ui/repositories/new", url.Values{"name": {"mine"}, "format": {"generic"}}); a.status != 403 {
		t.Errorf("a viewer creating: %d", a.status)
	}

	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	a := u.post("/ui/repositories/new", url.Values{"name": {"bad name!"}, "format": {"generic"}, "description": {"kept <b>here</b>"}})
	if a.status != 400 || !strings.Contains(a.body, `aria-invalid="true"`) || !strings.Contains(a.body, "kept &lt;b&gt;here&lt;/b&gt;") {
		t.Fatalf("a refused form: %d\n%s", a.status, a.body)
	}
	if a := u.post("/ui/repositories/new", url.Values{"name": {"umas"}, "format": {"npm"}}); a.status != 303 {
		t.Fatalf("a user creating: %d", a.status)
	}
	// Deleting takes the name typed again.
	if a := u.post("/ui/repositories/umas/delete", url.Values{"confirm": {"other"}}); a.status != 400 {
		t.Errorf("a delete not confirmed: %d", a.status)
	}
	if a := u.post("/ui/repositories/umas/delete", url.Values{"confirm": {"umas"}}); a.status != 303 {
		t.Errorf("a delete: %d", a.status)
	}
	if r := e.Do("GET", "/api/v1/repositories/umas", e.Admin, nil); r.Status != 404 {
		t.Errorf("the deleted repository: %d", r.Status)
	}
}

// TestAPIPage: the API page renders the document the API serves: every
// operation of it, by tag, and the schemas; it links the document.
func TestAPIPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/api")
	if a.status != 200 {
		t.Fatalf("the API page: %d", a.status)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		}
	}
	e.Do("GET", "/api/v1/openapi.json", "", nil).Want(200).JSON(&doc)
	n := 0
	for path, ops := range doc.Paths {
		for method, o := range ops {
			n++
			if !strings.Contains(a.body, `id="`+o.OperationID+`"`) || !strings.Contains(a.body, "<code>"+path+"</code>") {
				t.Errorf("%s %s (%s) is not on the page", method, path, o.OperationID)
			}
		}
	}
	if n < 50 || !strings.Contains(a.body, `id="schema-User"`) || !strings.Contains(a.body, "/api/v1/openapi.json") {
		t.Errorf("%d operations; the page:\n%.2000s", n, a.body)
	}
}
