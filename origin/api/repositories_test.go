package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
)

// specFormats are the format identifiers of the spec, plus generic.
var specFormats = []string{"docker", "maven", "npm", "pypi", "crates", "helm", "go", "nuget", "rubygems", "composer", "gradle", "conda", "generic"}

// servedFormats are the repository formats with client paths, from the
// one list of formats, sorted.
func servedFormats() []string {
	var out []string
	for _, f := range all.Build(&format.Env{}) {
		out = append(out, format.RepoFormats(f)...)
	}
	slices.Sort(out)
	return out
}

type repoList struct {
	Repositories []repo `json:"repositories"`
	Total        *int   `json:"total"`
	Page         *int   `json:"page"`
	Limit        *int   `json:"limit"`
}

func listRepos(e *origintest.Env, cred, query string) repoList {
	e.T.Helper()
	var l repoList
	e.Do("GET", "/api/v1/repositories"+query, cred, nil).Want(200).JSON(&l)
	if l.Total == nil || l.Page == nil || l.Limit == nil || l.Repositories == nil {
		e.T.Fatalf("repository list without repositories, total, page or limit: %+v", l)
	}
	return l
}

func repoNames(rs []repo) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestRepositories(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})

	t.Run("create", func(t *testing.T) {
		e := e.For(t)
		var r repo
		resp := e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{
			"name": "releases", "format": "maven", "description": "release builds", "public": true}).Want(201)
		resp.JSON(&r)
		if r.ID == "" || r.Name != "releases" || r.Format != "maven" || r.Description != "release builds" || !r.Public ||
			r.CreatedAt == "" || r.UpdatedAt == "" || r.ArtifactCount != 0 || r.SizeBytes != 0 {
			t.Fatalf("create answered %s", resp.Body)
		}
		if resp.Header.Get("X-Depot-Index") == "" {
			t.Fatalf("create answered no X-Depot-Index")
		}
		m := resp.Map()
		for _, k := range []string{"artifact_count", "size_bytes", "public", "description"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("create answer lacks %s: %s", k, resp.Body)
			}
		}
		if got := getRepo(e, r.ID); got != r {
			t.Fatalf("GET answers %+v, create answered %+v", got, r)
		}
	})

	t.Run("every served format", func(t *testing.T) {
		e := e.For(t)
		served := servedFormats()
		if !slices.Contains(served, "gradle") {
			t.Fatalf("gradle is not served (maven serves it): %v", served)
		}
		unserved := 0
		for _, f := range specFormats {
			if !slices.Contains(served, f) {
				// A repository nothing serves would answer 404 on every
				// client path: refused, naming the formats that are served.
				r := e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "fmt-" + f, "format": f}).
					WantError(400, "VALIDATION_FAILED").WantField("format")
				var b struct {
					Error struct{ Message string } `json:"error"`
				}
				r.JSON(&b)
				if !strings.Contains(b.Error.Message, fmt.Sprintf("%q", f)) || fmt.Sprint(r.Details()["served"]) != fmt.Sprint(served) {
					t.Fatalf("format %s refused without naming it and the served formats %v: %s", f, served, r.Body)
				}
				unserved++
				continue
			}
			var r repo
			e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "fmt-" + f, "format": f}).Want(201).JSON(&r)
			if r.Format != f {
				t.Fatalf("format %s created as %q", f, r.Format)
			}
		}
		if l := listRepos(e, e.Admin, "?limit=100"); *l.Total != 1+len(specFormats)-unserved {
			t.Fatalf("%d repositories after creating one per served format: %v", *l.Total, repoNames(l.Repositories))
		}
	})

	t.Run("bad format", func(t *testing.T) {
		e := e.For(t)
		for _, f := range []string{"", "bogus", "Docker", "npm "} {
			e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "badfmt", "format": f}).
				WantError(400, "VALIDATION_FAILED").WantField("format")
		}
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "badfmt"}).WantError(400, "VALIDATION_FAILED").WantField("format")
	})

	t.Run("bad names", func(t *testing.T) {
		e := e.For(t)
		for _, name := range []string{"../x", "a b", "", "a/b", "-x", ".x", "x\\y", "é", strings.Repeat("a", 101)} {
			e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": name, "format": "generic"}).
				WantError(400, "VALIDATION_FAILED").WantField("name")
		}
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "Images", "format": "docker"}).
			WantError(400, "VALIDATION_FAILED").WantField("name")
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "images", "format": "docker"}).Want(201)
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "Mixed.Case_1-x", "format": "generic"}).Want(201)
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "d", "format": "generic", "description": strings.Repeat("x", 4097)}).
			WantError(400, "VALIDATION_FAILED").WantField("description")
	})

	t.Run("duplicate", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "dup", "format": "generic"}).Want(201)
		for _, c := range []struct{ name, format string }{{"dup", "generic"}, {"DUP", "generic"}, {"Dup", "npm"}} {
			e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": c.name, "format": c.format}).WantError(409, "CONFLICT")
		}
	})

	t.Run("get", func(t *testing.T) {
		e := e.For(t)
		id := e.CreateRepo("gettable", "npm", false)
		if r := getRepo(e, id); r.ID != id || r.Name != "gettable" || r.Format != "npm" || r.Public {
			t.Fatalf("GET answered %+v", r)
		}
		e.Do("GET", "/api/v1/repositories/no-such-id", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/repositories/no-such-id", "", nil).WantError(401, "UNAUTHORIZED")
	})

	t.Run("update", func(t *testing.T) {
		e := e.For(t)
		id := e.CreateRepo("updatable", "generic", false)
		before := getRepo(e, id)
		var r repo
		e.Do("PUT", "/api/v1/repositories/"+id, e.Admin, map[string]any{"description": "now described", "public": true}).Want(200).JSON(&r)
		if r.Description != "now described" || !r.Public || r.Name != "updatable" || r.Format != "generic" || r.CreatedAt != before.CreatedAt {
			t.Fatalf("update answered %+v", r)
		}
		if !parseTime(t, r.UpdatedAt).After(parseTime(t, before.UpdatedAt)) {
			t.Fatalf("updated_at %s did not move past %s", r.UpdatedAt, before.UpdatedAt)
		}
		if got := getRepo(e, id); got.Description != "now described" || !got.Public {
			t.Fatalf("GET after update %+v", got)
		}
		// A partial update keeps the other fields.
		e.Do("PUT", "/api/v1/repositories/"+id, e.Admin, map[string]any{"public": false}).Want(200).JSON(&r)
		if r.Description != "now described" || r.Public {
			t.Fatalf("partial update answered %+v", r)
		}
		e.Do("PUT", "/api/v1/repositories/"+id, e.Admin, map[string]any{"name": "renamed"}).WantError(400, "VALIDATION_FAILED").WantField("name")
		e.Do("PUT", "/api/v1/repositories/"+id, e.Admin, map[string]any{"format": "npm"}).WantError(400, "VALIDATION_FAILED").WantField("format")
		e.Do("PUT", "/api/v1/repositories/"+id, e.Admin, map[string]any{"public": "yes"}).WantError(400, "VALIDATION_FAILED").WantField("public")
		e.Do("PUT", "/api/v1/repositories/no-such-id", e.Admin, map[string]any{"public": true}).WantError(404, "NOT_FOUND")
	})

	t.Run("delete removes artifacts", func(t *testing.T) {
		e := e.For(t)
		id := e.CreateRepo("doomed", "generic", false)
		a := put(e, e.Admin, "doomed/pkg/1.0/a.bin", "payload")
		e.Do("GET", "/api/v1/artifacts/"+a.ID, e.Admin, nil).Want(200)
		r := e.Do("DELETE", "/api/v1/repositories/"+id, e.Admin, nil).Want(204)
		if len(r.Body) != 0 {
			t.Fatalf("delete answered a body: %s", r.Body)
		}
		e.Do("GET", "/api/v1/repositories/"+id, e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/artifacts/"+a.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/artifacts/"+a.ID+"/download", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/generic/doomed/pkg/1.0/a.bin", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("DELETE", "/api/v1/repositories/"+id, e.Admin, nil).WantError(404, "NOT_FOUND")
		if contains(repoNames(listRepos(e, e.Admin, "?limit=100").Repositories), "doomed") {
			t.Fatalf("deleted repository still listed")
		}
		// The name is free, and a new repository of that name starts empty.
		id2 := e.CreateRepo("doomed", "generic", false)
		wantArtifactCount(t, e, id2, 0)
		e.Do("GET", "/generic/doomed/pkg/1.0/a.bin", e.Admin, nil).WantError(404, "NOT_FOUND")
		var pk struct{ Total int }
		e.Do("GET", "/api/v1/packages?repository_id="+id2, e.Admin, nil).Want(200).JSON(&pk)
		if pk.Total != 0 {
			t.Fatalf("recreated repository lists %d packages", pk.Total)
		}
	})

	t.Run("users and viewers", func(t *testing.T) {
		e := e.For(t)
		u := newUser(e, "maker", "user")
		v := newUser(e, "looker", "viewer")
		var r repo
		e.Do("POST", "/api/v1/repositories", u.token, map[string]any{"name": "makers", "format": "generic"}).Want(201).JSON(&r)
		// The creator administers what it created, and only that.
		e.Do("PUT", "/api/v1/repositories/"+r.ID, u.token, map[string]any{"description": "mine"}).Want(200)
		put(e, u.token, "makers/p/1/f", "x")
		e.Do("DELETE", "/api/v1/repositories/"+e.CreateRepo("not-makers", "generic", false), u.token, nil).WantError(403, "FORBIDDEN")
		e.Do("DELETE", "/api/v1/repositories/"+r.ID, u.token, nil).Want(204)
		e.Do("POST", "/api/v1/repositories", v.token, map[string]any{"name": "lookers", "format": "generic"}).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/repositories", "", map[string]any{"name": "anons", "format": "generic"}).WantError(401, "UNAUTHORIZED")
		// A token needs the admin scope to create a repository.
		tok := e.Token(u.token, []string{"repository:write"}, nil)
		e.Do("POST", "/api/v1/repositories", tok, map[string]any{"name": "tokens", "format": "generic"}).WantError(403, "FORBIDDEN")
		tok = e.Token(u.token, []string{"repository:admin:tokens"}, nil)
		e.Do("POST", "/api/v1/repositories", tok, map[string]any{"name": "other", "format": "generic"}).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/repositories", tok, map[string]any{"name": "tokens", "format": "generic"}).Want(201)
	})
}

func TestRepositoryList(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	var all []string
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("gen-%d", i)
		e.CreateRepo(name, "generic", false)
		all = append(all, name)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("npm-%d", i)
		e.CreateRepo(name, "npm", false)
		all = append(all, name)
	}

	t.Run("defaults", func(t *testing.T) {
		e := e.For(t)
		l := listRepos(e, e.Admin, "")
		if *l.Total != 8 || *l.Page != 1 || *l.Limit != 20 || len(l.Repositories) != 8 {
			t.Fatalf("default list: total %d page %d limit %d, %d items", *l.Total, *l.Page, *l.Limit, len(l.Repositories))
		}
		for _, r := range l.Repositories {
			if r.ID == "" || r.Format == "" || r.CreatedAt == "" {
				t.Fatalf("incomplete list item %+v", r)
			}
		}
	})

	t.Run("pages", func(t *testing.T) {
		e := e.For(t)
		var seen []string
		for pg := 1; pg <= 3; pg++ {
			l := listRepos(e, e.Admin, fmt.Sprintf("?page=%d&limit=3", pg))
			if *l.Total != 8 || *l.Page != pg || *l.Limit != 3 {
				t.Fatalf("page %d: total %d page %d limit %d", pg, *l.Total, *l.Page, *l.Limit)
			}
			want := 3
			if pg == 3 {
				want = 2
			}
			if len(l.Repositories) != want {
				t.Fatalf("page %d has %d items, want %d", pg, len(l.Repositories), want)
			}
			seen = append(seen, repoNames(l.Repositories)...)
		}
		for _, n := range all {
			if !contains(seen, n) {
				t.Fatalf("paging over all pages missed %s: %v", n, seen)
			}
		}
		if len(seen) != 8 {
			t.Fatalf("paging saw %v", seen)
		}
		if l := listRepos(e, e.Admin, "?page=9&limit=3"); len(l.Repositories) != 0 || *l.Total != 8 {
			t.Fatalf("page past the end: %+v", l)
		}
	})

	t.Run("format filter", func(t *testing.T) {
		e := e.For(t)
		l := listRepos(e, e.Admin, "?format=npm")
		if *l.Total != 3 || len(l.Repositories) != 3 {
			t.Fatalf("format=npm: total %d, %d items", *l.Total, len(l.Repositories))
		}
		for _, r := range l.Repositories {
			if r.Format != "npm" {
				t.Fatalf("format=npm lists %+v", r)
			}
		}
		if l := listRepos(e, e.Admin, "?format=docker"); *l.Total != 0 {
			t.Fatalf("format=docker: total %d", *l.Total)
		}
		e.Do("GET", "/api/v1/repositories?format=bogus", e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField("format")
	})

	t.Run("bad paging", func(t *testing.T) {
		e := e.For(t)
		for _, q := range []struct{ query, field string }{
			{"limit=0", "limit"}, {"limit=101", "limit"}, {"limit=-1", "limit"}, {"limit=x", "limit"},
			{"page=0", "page"}, {"page=-2", "page"}, {"page=abc", "page"},
		} {
			e.Do("GET", "/api/v1/repositories?"+q.query, e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField(q.field)
		}
		if l := listRepos(e, e.Admin, "?limit=100"); *l.Limit != 100 || len(l.Repositories) != 8 {
			t.Fatalf("limit=100: %+v", l)
		}
		if l := listRepos(e, e.Admin, "?limit=1"); len(l.Repositories) != 1 {
			t.Fatalf("limit=1: %d items", len(l.Repositories))
		}
	})

	t.Run("only readable repositories are listed", func(t *testing.T) {
		e := e.For(t)
		u := newUser(e, "reader", "user")
		e.Grant(e.CreateRepo("granted", "generic", false), u.id, false, "read")
		if l := listRepos(e, u.token, ""); *l.Total != 1 || l.Repositories[0].Name != "granted" {
			t.Fatalf("reader lists %v (total %d), want only granted", repoNames(l.Repositories), *l.Total)
		}
	})
}

func TestPublicRepositories(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	pubID := e.CreateRepo("pub", "generic", true)
	privID := e.CreateRepo("priv", "generic", false)
	pa := put(e, e.Admin, "pub/tool/1.0/tool.txt", "public bytes")
	qa := put(e, e.Admin, "priv/tool/1.0/tool.txt", "private bytes")

	t.Run("anonymous reads a public repository", func(t *testing.T) {
		e := e.For(t)
		l := listRepos(e, "", "")
		if *l.Total != 1 || len(l.Repositories) != 1 || l.Repositories[0].ID != pubID {
			t.Fatalf("anonymous list %v, want only pub", repoNames(l.Repositories))
		}
		e.Do("GET", "/api/v1/repositories/"+pubID, "", nil).Want(200)
		e.Do("GET", "/api/v1/artifacts/"+pa.ID, "", nil).Want(200)
		if r := e.Do("GET", "/api/v1/artifacts/"+pa.ID+"/download", "", nil).Want(200); string(r.Body) != "public bytes" {
			t.Fatalf("anonymous API download: %q", r.Body)
		}
		if r := e.Do("GET", "/generic/pub/tool/1.0/tool.txt", "", nil).Want(200); string(r.Body) != "public bytes" {
			t.Fatalf("anonymous generic download: %q", r.Body)
		}
		var pk struct{ Total int }
		e.Do("GET", "/api/v1/packages", "", nil).Want(200).JSON(&pk)
		if pk.Total != 1 {
			t.Fatalf("anonymous package list total %d, want 1", pk.Total)
		}
	})

	t.Run("a token narrowed to another repository still reads a public one", func(t *testing.T) {
		e := e.For(t)
		tok := e.Token(e.Admin, []string{"repository:read:priv"}, nil)
		if r := e.Do("GET", "/generic/pub/tool/1.0/tool.txt", tok, nil).Want(200); string(r.Body) != "public bytes" {
			t.Fatalf("narrowed token on public repo: %q", r.Body)
		}
		e.Do("GET", "/api/v1/repositories/"+pubID, tok, nil).Want(200)
		// ...but never writes there.
		e.Do("PUT", "/generic/pub/tool/1.0/other.txt", tok, "x").WantError(403, "FORBIDDEN")
	})

	t.Run("anonymous never writes", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/generic/pub/tool/1.0/new.txt", "", "x").WantError(401, "UNAUTHORIZED")
		e.Do("DELETE", "/generic/pub/tool/1.0/tool.txt", "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("PUT", "/api/v1/repositories/"+pubID, "", map[string]any{"description": "x"}).WantError(401, "UNAUTHORIZED")
		e.Do("DELETE", "/api/v1/artifacts/"+pa.ID, "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("DELETE", "/api/v1/repositories/"+pubID, "", nil).WantError(401, "UNAUTHORIZED")
		wantArtifactCount(t, e, pubID, 1)
	})

	t.Run("anonymous is asked to sign in for a private repository", func(t *testing.T) {
		e := e.For(t)
		e.Do("GET", "/api/v1/repositories/"+privID, "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/artifacts/"+qa.ID, "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/artifacts/"+qa.ID+"/download", "", nil).WantError(401, "UNAUTHORIZED")
		r := e.Do("GET", "/generic/priv/tool/1.0/tool.txt", "", nil).WantError(401, "UNAUTHORIZED")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("generic 401 challenge %q, want Basic", r.Header.Get("WWW-Authenticate"))
		}
		// A missing repository looks the same as a private one.
		e.Do("GET", "/generic/nothing/tool/1.0/tool.txt", "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/packages?repository_id="+privID, "", nil).WantError(401, "UNAUTHORIZED")
	})

	t.Run("signed-in users without a grant read public repositories only", func(t *testing.T) {
		e := e.For(t)
		u := newUser(e, "someone", "viewer")
		e.Do("GET", "/api/v1/repositories/"+pubID, u.token, nil).Want(200)
		e.Do("GET", "/generic/pub/tool/1.0/tool.txt", u.token, nil).Want(200)
		e.Do("GET", "/api/v1/repositories/"+privID, u.token, nil).WantError(403, "FORBIDDEN")
		// On a package path a private repository one cannot read looks
		// like a missing one.
		e.Do("GET", "/generic/priv/tool/1.0/tool.txt", u.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/generic/no-such-repo/tool/1.0/tool.txt", u.token, nil).WantError(404, "NOT_FOUND")
		e.Do("PUT", "/generic/pub/tool/1.0/new.txt", u.token, "x").WantError(403, "FORBIDDEN")
	})

	t.Run("making it private closes it", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/api/v1/repositories/"+pubID, e.Admin, map[string]any{"public": false}).Want(200)
		e.Do("GET", "/api/v1/repositories/"+pubID, "", nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/generic/pub/tool/1.0/tool.txt", "", nil).WantError(401, "UNAUTHORIZED")
		if l := listRepos(e, "", ""); *l.Total != 0 {
			t.Fatalf("anonymous still lists %v", repoNames(l.Repositories))
		}
	})
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return v
}

func TestRepositorySettings(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	var r struct {
		ID       string            `json:"id"`
		Settings map[string]string `json:"settings"`
	}
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "rel", "format": "maven",
		"settings": map[string]string{"version_policy": "release"}}).Want(201).JSON(&r)
	if r.Settings["version_policy"] != "release" {
		t.Fatalf("settings %v", r.Settings)
	}
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "bad", "format": "maven",
		"settings": map[string]string{"version_policy": "sometimes"}}).WantError(400, "VALIDATION_FAILED").WantField("settings")
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "bad", "format": "generic",
		"settings": map[string]string{"version_policy": "release"}}).WantError(400, "VALIDATION_FAILED").WantField("settings")
	e.Do("PUT", "/api/v1/repositories/"+r.ID, e.Admin, map[string]any{"settings": map[string]string{"version_policy": "snapshot"}}).Want(200).JSON(&r)
	if r.Settings["version_policy"] != "snapshot" {
		t.Fatalf("updated settings %v", r.Settings)
	}
	e.Do("PUT", "/api/v1/repositories/"+r.ID, e.Admin, map[string]any{"settings": map[string]string{"layout": "flat"}}).
		WantError(400, "VALIDATION_FAILED").WantField("settings")
	// gradle repositories are served by the maven format, with its settings.
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "grd", "format": "gradle",
		"settings": map[string]string{"version_policy": "snapshot"}}).Want(201)
	// Each format's own name rule: docker names are lowercase, others need not be.
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "Images", "format": "docker"}).
		WantError(400, "VALIDATION_FAILED").WantField("name")
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "Libs", "format": "generic"}).Want(201)
}
