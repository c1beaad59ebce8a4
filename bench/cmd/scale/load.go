package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/bench/internal/stat"
)

// who is one principal the routes are measured as.
type who struct {
	name, password string
	token          string    // session JWT, for /api/v1
	at             time.Time // when token was issued
}

type bench struct {
	o      options
	url    string
	fx     *fixture
	log    *slog.Logger
	client *http.Client
	admin  *who
	user   *who
	repoID map[string]string // name -> id
}

func newBench(o options, base string, fx *fixture, log *slog.Logger) (*bench, error) {
	b := &bench{o: o, url: base, fx: fx, log: log, repoID: map[string]string{},
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		admin:  &who{name: "admin", password: adminPassword},
		user:   &who{name: fx.User, password: fx.UserPassword}}
	for _, r := range fx.Repos {
		b.repoID[r.Name] = r.ID
	}
	return b, b.relogin()
}

// relogin takes fresh session tokens when they are older than 10
// minutes (they live 15).
func (b *bench) relogin() error {
	for _, w := range []*who{b.admin, b.user} {
		if time.Since(w.at) < 10*time.Minute {
			continue
		}
		w.at = time.Now()
		tok, err := login(b.url, w.name, w.password)
		if err != nil {
			return err
		}
		w.token = tok
	}
	return nil
}

// get sends one GET as w: a bearer session token under /api/v1, HTTP
// Basic (as package clients send it) on format paths.
func (b *bench) get(w *who, path string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, b.url+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	if strings.HasPrefix(path, "/api/v1/") {
		req.Header.Set("Authorization", "Bearer "+w.token)
	} else {
		req.SetBasicAuth(w.name, w.password)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

// expect GETs path as w and wants status and, in the body, every one of
// contains.
func (b *bench) expect(w *who, path string, status int, contains ...string) ([]byte, http.Header, error) {
	code, h, body, err := b.get(w, path)
	if err != nil {
		return nil, nil, err
	}
	if code != status {
		return nil, nil, fmt.Errorf("GET %s as %s: %d, want %d: %.300s", path, w.name, code, status, body)
	}
	for _, c := range contains {
		if !strings.Contains(string(body), c) {
			return nil, nil, fmt.Errorf("GET %s as %s: the answer lacks %q: %.300s", path, w.name, c, body)
		}
	}
	return body, h, nil
}

// check reads the generated data back through every format's own routes,
// so that the figures are of routes that work on it.
func (b *bench) check() error {
	fx := b.fx
	npmRepo := fx.Large["npm"]
	pkg := name(repoIndex(fx, npmRepo), 0)
	steps := []struct {
		w        *who
		path     string
		status   int
		contains []string
	}{
		{b.admin, "/api/v1/repositories?limit=1", 200, []string{fmt.Sprintf(`"total":%d`, len(fx.Repos))}},
		{b.admin, "/api/v1/admin/stats", 200, []string{fmt.Sprintf(`"artifacts":%d`, fx.Artifacts)}},
		{b.user, "/api/v1/admin/stats", 403, nil},
		{b.user, "/npm/" + npmRepo + "/" + pkg, 200, []string{`"1.9.0"`, `"latest":"1.9.0"`, "tarball"}},
		{b.user, "/npm/" + npmRepo + "/" + pkg + "/-/" + pkg + "-1.0.0.tgz", 200, nil},
		{b.user, "/npm/" + npmRepo + "/-/v1/search?text=" + pkg, 200, []string{pkg}},
		{b.user, "/pypi/" + fx.Large["pypi"] + "/simple/", 200, []string{"/simple/" + name(repoIndex(fx, fx.Large["pypi"]), 0) + "/"}},
		{b.user, "/pypi/" + fx.Large["pypi"] + "/simple/" + name(repoIndex(fx, fx.Large["pypi"]), 0) + "/", 200, []string{".whl", "data-dist-info-metadata"}},
		{b.user, "/v2/_catalog?n=5", 200, []string{`"repositories"`}},
		{b.user, "/v2/" + fx.Large["docker"] + "/" + strings.ReplaceAll(name(repoIndex(fx, fx.Large["docker"]), 0), "-", "/") + "/manifests/v3", 200, []string{"schemaVersion"}},
		{b.user, "/v2/" + fx.Large["docker"] + "/" + strings.ReplaceAll(name(repoIndex(fx, fx.Large["docker"]), 0), "-", "/") + "/tags/list", 200, []string{`"v9"`}},
		{b.user, fx.GenericGet, 200, []string{"generic file 00"}},
		{b.user, "/api/v1/artifacts/" + fx.ArtifactID + "/download", 200, []string{"generic file 00"}},
		{b.user, "/api/v1/packages/" + url.PathEscape(fx.Package) + "/versions", 200, []string{`"1.0.9"`}},
	}
	for _, s := range steps {
		if _, _, err := b.expect(s.w, s.path, s.status, s.contains...); err != nil {
			return err
		}
	}
	// The user sees the public repositories and the granted private ones.
	want := 0
	for _, r := range fx.Repos {
		if r.Public || r.Granted != "" {
			want++
		}
	}
	if _, _, err := b.expect(b.user, "/api/v1/repositories?limit=1", 200, fmt.Sprintf(`"total":%d`, want)); err != nil {
		return err
	}
	return nil
}

func repoIndex(fx *fixture, name string) int {
	for _, r := range fx.Repos {
		if r.Name == name {
			return r.Index
		}
	}
	return -1
}

// route is one measured request.
type route struct {
	name      string
	path      string
	adminOnly bool
}

func (b *bench) routes(w *who) ([]route, error) {
	fx := b.fx
	word := "parser"
	// A package of the typical npm repository, which the bench user reads.
	exact := name(repoIndex(fx, fx.Typical["npm"]), 3)
	rs := []route{
		{"repositories, page 1", "/api/v1/repositories?page=1&limit=20", false},
		{"repositories, page 20", "/api/v1/repositories?page=20&limit=20", false},
		{"packages, page 1", "/api/v1/packages?page=1&limit=20", false},
		{"packages, page 50", "/api/v1/packages?page=50&limit=20", false},
		{"packages of the large npm repository", "/api/v1/packages?limit=20&repository_id=" + b.repoID[fx.Large["npm"]], false},
		{"packages of a typical npm repository", "/api/v1/packages?limit=20&repository_id=" + b.repoID[fx.Typical["npm"]], false},
		{"packages, query=" + word, "/api/v1/packages?limit=20&query=" + word, false},
		{"packages, query=" + word + " in the large npm repository", "/api/v1/packages?limit=20&query=" + word + "&repository_id=" + b.repoID[fx.Large["npm"]], false},
		{"package versions", "/api/v1/packages/" + url.PathEscape(fx.Package) + "/versions", false},
		{"admin stats", "/api/v1/admin/stats", true},
		{"_catalog?n=100", "/v2/_catalog?n=100", false},
		{"_catalog, next page", "", false},
		{"npm search, large repository", "/npm/" + fx.Large["npm"] + "/-/v1/search?text=" + word, false},
		{"npm search, typical repository", "/npm/" + fx.Typical["npm"] + "/-/v1/search?text=" + word, false},
		{"pypi simple/, large repository", "/pypi/" + fx.Large["pypi"] + "/simple/", false},
		{"pypi simple/, typical repository", "/pypi/" + fx.Typical["pypi"] + "/simple/", false},
		{"quick search q=" + word, "/api/v1/search/quick?q=" + word, false},
		{"quick search, a package's whole name", "/api/v1/search/quick?q=" + url.QueryEscape(exact), false},
		{"quick search, a file name's start", "/api/v1/search/quick?q=" + url.QueryEscape(exact+"-1.0"), false},
		{"quick search, no match", "/api/v1/search/quick?q=zzqx-none", false},
		{"suggest q=" + word[:4], "/api/v1/search/suggest?q=" + word[:4], false},
		{"advanced search query=" + word + "&format=npm", "/api/v1/search/advanced?query=" + word + "&format=npm", false},
		{"checksum search (sha256)", "/api/v1/search/checksum?checksum=" + fx.UniqueSHA256, false},
		{"generic download", fx.GenericGet, false},
		{"REST artifact download", "/api/v1/artifacts/" + fx.ArtifactID + "/download", false},
	}
	// The next catalog page is the one the first page's Link names.
	_, h, err := b.expect(w, "/v2/_catalog?n=100", 200)
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`<([^>]+)>`).FindStringSubmatch(h.Get("Link"))
	for i := range rs {
		if rs[i].path != "" {
			continue
		}
		if m == nil {
			return nil, fmt.Errorf("the first catalog page as %s has no Link to a next page", w.name)
		}
		u, err := url.Parse(m[1])
		if err != nil {
			return nil, err
		}
		rs[i].path = u.RequestURI()
	}
	return rs, nil
}

// row is the figures of one route as one user.
type row struct {
	route, who string
	status     int
	seq, conc  []time.Duration
	concWall   time.Duration
	note       string
}

func (b *bench) measure() []row {
	var rows []row
	for _, w := range []*who{b.admin, b.user} {
		if err := b.relogin(); err != nil {
			rows = append(rows, row{who: w.name, note: err.Error()})
			continue
		}
		rs, err := b.routes(w)
		if err != nil {
			rows = append(rows, row{who: w.name, note: err.Error()})
			continue
		}
		for _, r := range rs {
			if r.adminOnly && w != b.admin {
				continue
			}
			if err := b.relogin(); err != nil {
				rows = append(rows, row{route: r.name, who: w.name, note: err.Error()})
				continue
			}
			rw := b.run(w, r)
			b.log.Info("measured", "route", r.name, "as", w.name, "status", rw.status,
				"p50_ms", ms(stat.Percentile(rw.seq, 50)), "conc_p50_ms", ms(stat.Percentile(rw.conc, 50)))
			rows = append(rows, rw)
		}
	}
	return rows
}

// run measures one route: n sequential requests, then cn requests from c
// concurrent clients, each run stopping early after the route budget.
func (b *bench) run(w *who, r route) row {
	rw := row{route: r.name, who: w.name}
	code, _, _, err := b.get(w, r.path) // warm: credential cache, connection
	if err != nil {
		rw.note = err.Error()
		return rw
	}
	rw.status = code
	deadline := time.Now().Add(b.o.routeBudget)
	for i := 0; i < b.o.n && time.Now().Before(deadline); i++ {
		t := time.Now()
		c, _, _, err := b.get(w, r.path)
		d := time.Since(t)
		if err != nil || c != code {
			rw.note = fmt.Sprintf("status %d, error %v", c, err)
			break
		}
		rw.seq = append(rw.seq, d)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan struct{})
	go func() {
		defer close(next)
		deadline := time.Now().Add(b.o.routeBudget)
		for i := 0; i < b.o.cn && time.Now().Before(deadline); i++ {
			next <- struct{}{}
		}
	}()
	start := time.Now()
	for range b.o.c {
		wg.Go(func() {
			for range next {
				t := time.Now()
				c, _, _, err := b.get(w, r.path)
				d := time.Since(t)
				mu.Lock()
				if err != nil || c != code {
					rw.note = fmt.Sprintf("concurrent: status %d, error %v", c, err)
				} else {
					rw.conc = append(rw.conc, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rw.concWall = time.Since(start)
	return rw
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func printRows(rows []row) {
	fmt.Println("| route | as | status | p50 ms | p90 ms | p99 ms | concurrent p50 / p90 / p99 ms | req/s | p50 < 10 ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ok := verdict(len(r.seq) > 0 && stat.Percentile(r.seq, 50) < 10*time.Millisecond)
		rate := 0.0
		if r.concWall > 0 {
			rate = float64(len(r.conc)) / r.concWall.Seconds()
		}
		note := ""
		if r.note != "" {
			note = " (" + r.note + ")"
		}
		fmt.Printf("| %s%s | %s | %d | %s | %s | %s | %s / %s / %s | %.0f | %s |\n", r.route, note, r.who, r.status,
			ms(stat.Percentile(r.seq, 50)), ms(stat.Percentile(r.seq, 90)), ms(stat.Percentile(r.seq, 99)),
			ms(stat.Percentile(r.conc, 50)), ms(stat.Percentile(r.conc, 90)), ms(stat.Percentile(r.conc, 99)), rate, ok)
	}
}

// reindex has the origin read every artifact again for search (POST
// /admin/reindex) and waits for it to finish: how long it took, and what
// it reports.
func (b *bench) reindex() (time.Duration, string, error) {
	req, _ := http.NewRequest(http.MethodPost, b.url+"/api/v1/admin/reindex", nil)
	req.Header.Set("Authorization", "Bearer "+b.admin.token)
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusAccepted:
	case http.StatusConflict:
		b.log.Info("a reindex is already running (one stopped with its origin goes on): waiting for it")
	default:
		return 0, "", fmt.Errorf("POST /admin/reindex: %s", resp.Status)
	}
	last := time.Now()
	for {
		time.Sleep(time.Second)
		if err := b.relogin(); err != nil {
			return 0, "", err
		}
		body, _, err := b.expect(b.admin, "/api/v1/admin/reindex", 200)
		if err != nil {
			return 0, "", err
		}
		var st struct {
			Reindex struct {
				Status              string
				Total, Done, Failed int
			}
		}
		if err := json.Unmarshal(body, &st); err != nil {
			return 0, "", err
		}
		r := st.Reindex
		if r.Status == "completed" {
			return time.Since(start), fmt.Sprintf("%d artifacts read, %d not inspected", r.Done, r.Failed), nil
		}
		if time.Since(last) >= 30*time.Second {
			last = time.Now()
			b.log.Info("reindexing", "done", r.Done, "of", r.Total)
		}
	}
}
