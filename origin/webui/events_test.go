package webui_test

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestEventsPage: the newest events first, filtered by event and
// repository, older ones by page; a user sees the events of the
// repositories they may read and no other; the live endpoint answers the
// events after a cursor.
func TestEventsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	mine := e.CreateRepo("mine", "generic", false)
	e.CreateRepo("hidden", "generic", false)
	for i := range 60 {
		e.Do("PUT", fmt.Sprintf("/generic/mine/tool/1.%d/t.bin", i), e.Admin, "x").Want(201)
	}
	e.Do("PUT", "/generic/hidden/secret-tool/1.0/t.bin", e.Admin, "x").Want(201)
	uid := e.CreateUser("uma", "user", "uma-password-1")
	e.Grant(mine, uid, false, "read")

	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/events")
	if a.status != 200 || !strings.Contains(a.body, "secret-tool 1.0") || strings.Index(a.body, "secret-tool 1.0") > strings.Index(a.body, "tool 1.59") {
		t.Fatalf("the newest first: %d\n%.3000s", a.status, a.body)
	}
	if strings.Contains(a.body, "tool 1.9<") || !strings.Contains(a.body, `id="older-events"`) {
		t.Errorf("the first page holds more than its 50, or no link to older ones")
	}
	older := regexpFind(a.body, `href="(/ui/events\?before=[^"]+)"`)
	if b := p.get(html.UnescapeString(older)); !strings.Contains(b.body, "tool 1.9<") || strings.Contains(b.body, "secret-tool") {
		t.Errorf("the older page:\n%.2000s", b.body)
	}
	if b := tbody(p.get("/ui/events?type=repository.created")); strings.Contains(b.body, "artifact.uploaded") || !strings.Contains(b.body, ">hidden<") {
		t.Errorf("filtered by event:\n%.2000s", b.body)
	}
	if b := tbody(p.get("/ui/events?repository=hidden")); strings.Contains(b.body, "tool 1.5") || !strings.Contains(b.body, "secret-tool") {
		t.Errorf("filtered by repository:\n%.2000s", b.body)
	}

	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if b := tbody(u.get("/ui/events")); strings.Contains(b.body, "secret-tool") || strings.Contains(b.body, "user.created") || !strings.Contains(b.body, "tool 1.59") {
		t.Errorf("a user's events:\n%.2000s", b.body)
	}
	if b := u.get("/ui/events?repository=hidden"); b.status != 404 {
		t.Errorf("a repository the user may not read: %d", b.status)
	}

	// Live: the events after the newest shown, as they come.
	live := regexpFind(a.body, `data-live="([^"]+)"`)
	done := make(chan answer, 1)
	go func() { done <- p.get(html.UnescapeString(live)) }()
	e.Do("PUT", "/generic/mine/tool/2.0/t.bin", e.Admin, "x").Want(201)
	select {
	case b := <-done:
		var got struct {
			Events []struct{ Event, Subject, Repository string }
			Next   string `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(b.body), &got); err != nil || len(got.Events) != 1 || got.Events[0].Subject != "tool 2.0" || got.Next == "" {
			t.Fatalf("live: %d %s (%v)", b.status, b.body, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the live endpoint did not answer the new event")
	}
}

// TestLiveEventsInTheBrowser: an upload made while the events page is
// open appears at its top without a reload.
func TestLiveEventsInTheBrowser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	b := newBrowser(t, e.URL)
	b.open("/ui/login")
	b.do(then("#new-repository", append(fill("username", "admin", "password", origintest.AdminPassword), chromedp.Click(chromedp.ID("sign-in")))...)...)
	b.open("/ui/events")
	if !strings.Contains(b.text("#events tbody"), "repository.created") {
		t.Fatalf("the events: %q", b.text("#events tbody"))
	}
	e.Do("PUT", "/generic/files/tool/3.1/t.bin", e.Admin, "x").Want(201)
	b.do(chromedp.WaitVisible(chromedp.CSS(`#events tbody tr.new`)))
	if top := b.text("#events tbody tr"); !strings.Contains(top, "artifact.uploaded") || !strings.Contains(top, "tool 3.1") {
		t.Errorf("the top row: %q", top)
	}
	b.shot("events-live")
	b.clean()
}

// tbody is the answer with its body cut to the table's rows.
func tbody(a answer) answer {
	if i := strings.Index(a.body, "<tbody>"); i >= 0 {
		a.body = a.body[i:]
		if j := strings.Index(a.body, "</tbody>"); j >= 0 {
			a.body = a.body[:j]
		}
	}
	return a
}

func regexpFind(s, re string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestStatisticsPage: downloads made now show in the last hour's bar and
// the day's, from the history the origin adds to (every 50 ms here), with
// the totals; the page is the administrators'.
func TestStatisticsPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.DownloadsReport = 50 * time.Millisecond }})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/t.bin", e.Admin, "x").Want(201)
	for range 3 {
		e.Do("GET", "/generic/files/tool/1.0/t.bin", e.Admin, nil).Want(200)
	}
	var st struct {
		ByHour []struct{ Downloads int64 } `json:"downloads_by_hour"`
		ByDay  []struct{ Downloads int64 } `json:"downloads_by_day"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.Do("GET", "/api/v1/admin/stats", e.Admin, nil).Want(200).JSON(&st)
		if len(st.ByHour) == 48 && st.ByHour[47].Downloads == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(st.ByHour) != 48 || st.ByHour[47].Downloads != 3 || len(st.ByDay) != 30 || st.ByDay[29].Downloads != 3 {
		t.Fatalf("the history: %+v", st)
	}
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/stats")
	if a.status != 200 || !strings.Contains(a.body, `id="stat-artifacts">1<`) || len(regexp.MustCompile(`height="[1-9][0-9]*" class="bar"`).FindAllString(a.body, -1)) != 2 ||
		!strings.Contains(a.body, ": 3</title>") {
		t.Fatalf("the statistics page: %d\n%.4000s", a.status, a.body)
	}
	u := newForm(t, e.URL)
	e.CreateUser("uma", "user", "uma-password-1")
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/stats"); a.status != 403 {
		t.Errorf("a user's statistics: %d", a.status)
	}
}

// TestSearchPage: a file is found by its checksum, with links to its
// version and its download; a user finds only what they may read; a
// malformed checksum is refused on the form.
func TestSearchPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	e.CreateRepo("hidden", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "abc").Want(201)
	e.Do("PUT", "/generic/hidden/tool/1.0/a.bin", e.Admin, "abc").Want(201)
	const sha256abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	a := p.get("/ui/search?checksum=" + sha256abc)
	if a.status != 200 || !strings.Contains(a.body, "2 files with the sha256") || !strings.Contains(a.body, "/ui/repositories/files/version?name=tool&amp;version=1.0") {
		t.Fatalf("the admin's search: %d\n%.3000s", a.status, a.body)
	}
	id := e.CreateUser("uma", "user", "uma-password-1")
	e.Grant(e.CreateRepo("mine", "generic", false), id, false, "read")
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/search?checksum=" + sha256abc); !strings.Contains(a.body, "0 files") || strings.Contains(a.body, "/repositories/hidden") {
		t.Errorf("a user's search:\n%.3000s", a.body)
	}
	if a := u.get("/ui/search?checksum=xyz"); a.status != 400 || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Errorf("a malformed checksum: %d", a.status)
	}

	// Quick search: the files' package by name, a file by its name.
	a = p.get("/ui/search?q=tool")
	if !strings.Contains(a.body, "2 results for <q>tool</q>") || !strings.Contains(a.body, `href="/ui/repositories/hidden/package?name=tool"`) {
		t.Errorf("quick search as the admin:\n%.3000s", a.body)
	}
	if a := u.get("/ui/search?q=a.bin"); !strings.Contains(a.body, "0 results") {
		t.Errorf("quick search as a user who reads neither:\n%.3000s", a.body)
	}
	if a := u.get("/ui/search?q=" + strings.Repeat("x", 300)); a.status != 400 || !strings.Contains(a.body, `id="q" name="q"`) {
		t.Errorf("a query too long: %d", a.status)
	}
	// Advanced: by repository and dates, refusals on the field.
	a = p.get("/ui/search?mode=advanced&repository=files&min_date=2000-01-01")
	if !strings.Contains(a.body, "1 version found") || !strings.Contains(a.body, "/ui/repositories/files/version?name=tool&amp;version=1.0") {
		t.Errorf("advanced search:\n%.3000s", a.body)
	}
	if a := p.get("/ui/search?mode=advanced&min_date=soon"); a.status != 400 || !strings.Contains(a.body, `id="min_date" name="min_date" type="date" value="soon" aria-invalid="true"`) {
		t.Errorf("a bad date: %d\n%.3000s", a.status, a.body)
	}
	// Suggestions for the box, as JSON.
	if a := p.get("/ui/search/suggest?q=to"); a.status != 200 || !strings.Contains(a.body, `{"text":"tool","type":"package"}`) {
		t.Errorf("suggestions: %d %s", a.status, a.body)
	}
	// The index: an administrator's to see and reindex.
	if a := u.get("/ui/search"); strings.Contains(a.body, "Search index") {
		t.Error("a user sees the search index")
	}
	if a := u.post("/ui/search/reindex", nil); a.status != 403 {
		t.Errorf("a user's reindex: %d", a.status)
	}
	if a := p.post("/ui/search/reindex", nil); a.status != 303 {
		t.Errorf("the admin's reindex: %d %s", a.status, a.body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for a = p.get("/ui/search"); !strings.Contains(a.body, "Reindex completed: 2 of 2 artifacts read") && time.Now().Before(deadline); a = p.get("/ui/search") {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(a.body, "Reindex completed: 2 of 2 artifacts read") || !strings.Contains(a.body, "by admin") {
		t.Errorf("the reindex's progress:\n%.3000s", a.body)
	}
}
