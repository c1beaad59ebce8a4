package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestAuthorizationMatrix runs every subject against every repository,
// artifact and generic route of one private generic repository, "matrix",
// and checks the status and that the state agrees with it (a refused
// write changed nothing, an accepted one took effect).
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})

	// The expired token is made first so that setup runs while it ages.
	expiry := e.Clock.Now().Add(time.Minute)
	expired := e.Token(e.Admin, []string{"admin"}, &expiry)
	e.Do("GET", "/api/v1/users/me", expired, nil).Want(200)

	viewerNone := newUser(e, "viewer-none", "viewer")
	viewerRead := newUser(e, "viewer-read", "viewer")
	viewerWrite := newUser(e, "viewer-write", "viewer")
	viewerAdmin := newUser(e, "viewer-admin", "viewer")
	userNone := newUser(e, "user-none", "user")
	userRead := newUser(e, "user-read", "user")
	userWrite := newUser(e, "user-write", "user")
	userDelete := newUser(e, "user-delete", "user")
	userAdmin := newUser(e, "user-admin", "user")
	member := newUser(e, "member", "user")
	var group struct{ ID string }
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "writers"}).Want(201).JSON(&group)
	e.Do("POST", "/api/v1/groups/"+group.ID+"/members", e.Admin, map[string]any{"user_ids": []string{member.id}}).Want(200)

	// other-repo exists, and user-write may write there too: the narrowed
	// token below is refused on matrix because of its scope alone.
	e.Grant(e.CreateRepo("other-repo", "generic", false), userWrite.id, false, "write")

	type fixture struct{ repoID, artifactID string }
	var fx fixture
	// build creates matrix with its grants and one artifact; it runs again
	// whenever a subject deletes the repository.
	build := func() {
		fx.repoID = e.CreateRepo("matrix", "generic", false)
		for _, g := range []struct {
			id    string
			group bool
			perm  string
		}{
			{viewerRead.id, false, "read"}, {viewerWrite.id, false, "write"}, {viewerAdmin.id, false, "admin"},
			{userRead.id, false, "read"}, {userWrite.id, false, "write"}, {userDelete.id, false, "delete"},
			{userAdmin.id, false, "admin"}, {group.ID, true, "write"},
		} {
			e.Grant(fx.repoID, g.id, g.group, g.perm)
		}
		fx.artifactID = put(e, e.Admin, "matrix/base/1.0/base.txt", "base").ID
	}
	build()

	revoked := e.Token(e.Admin, []string{"admin"}, nil)
	e.Do("GET", "/api/v1/users/me", revoked, nil).Want(200)
	var toks struct {
		Tokens []struct{ ID string } `json:"tokens"`
	}
	e.Do("GET", "/api/v1/users/me/tokens", e.Admin, nil).Want(200).JSON(&toks)
	e.Do("DELETE", "/api/v1/users/me/tokens/"+toks.Tokens[len(toks.Tokens)-1].ID, e.Admin, nil).Want(204)

	readScope := e.Token(userWrite.token, []string{"repository:read"}, nil)
	otherRepo := e.Token(userWrite.token, []string{"repository:write:other-repo"}, nil)
	rightRepo := e.Token(userWrite.token, []string{"repository:write:matrix"}, nil)
	wideOnReader := e.Token(userRead.token, []string{"repository:admin:matrix"}, nil)
	deleteOnAdmin := e.Token(userAdmin.token, []string{"repository:delete:matrix"}, nil)
	writeOnGlobalAdmin := e.Token(e.Admin, []string{"repository:write:matrix"}, nil)

	// Past the token's expiry, well within every session's lifetime.
	e.Clock.Advance(2 * time.Minute)

	const (
		ok    = 200
		made  = 201
		gone  = 204
		auth  = 401
		forbd = 403
		none  = 404
	)
	type want struct {
		getRepo, putRepo, delRepo, getArt, download, delArt, genGet, genPut, genDel int
	}
	everything := func(code int) want { return want{code, code, code, code, code, code, code, code, code} }
	reads := want{ok, forbd, forbd, ok, ok, forbd, ok, forbd, forbd}
	writes := want{ok, forbd, forbd, ok, ok, forbd, ok, made, forbd}
	deletes := want{ok, forbd, forbd, ok, ok, gone, ok, forbd, gone}
	full := want{ok, ok, gone, ok, ok, gone, ok, made, gone}
	// Who may not read a private repository cannot tell it from a missing
	// one on the package paths.
	hidden := want{forbd, forbd, forbd, forbd, forbd, forbd, none, none, none}

	rows := []struct {
		subject string
		cred    string // Authorization header value; "" is anonymous
		want    want
	}{
		{"anonymous", "", everything(auth)},
		{"viewer without grant", "Bearer " + viewerNone.token, hidden},
		{"viewer with read", "Bearer " + viewerRead.token, reads},
		{"viewer with write", "Bearer " + viewerWrite.token, reads},
		{"viewer with admin", "Bearer " + viewerAdmin.token, reads},
		{"user without grant", "Bearer " + userNone.token, hidden},
		{"user with read", "Bearer " + userRead.token, reads},
		{"user with write", "Bearer " + userWrite.token, writes},
		{"user with delete (Basic)", basic(userDelete.name, userPW), deletes},
		{"user with admin on the repository", "Bearer " + userAdmin.token, full},
		{"user with write through a group", "Bearer " + member.token, writes},
		{"global admin", "Bearer " + e.Admin, full},
		{"expired admin token", "Bearer " + expired, everything(auth)},
		{"revoked admin token", "Bearer " + revoked, everything(auth)},
		{"bad password (Basic)", basic(userAdmin.name, "Wrong-Password-1"), everything(auth)},
		{"token repository:read of a writer", "Bearer " + readScope, reads},
		{"token repository:write:other-repo of a writer", "Bearer " + otherRepo, hidden},
		{"token repository:write:matrix of a writer", "Bearer " + rightRepo, writes},
		{"token repository:write:matrix of a writer (Basic)", basic(userWrite.name, rightRepo), writes},
		{"token repository:admin:matrix of a reader", "Bearer " + wideOnReader, reads},
		{"token repository:delete:matrix of a repository admin", "Bearer " + deleteOnAdmin, deletes},
		{"token repository:write:matrix of the global admin", "Bearer " + writeOnGlobalAdmin, writes},
	}

	// adminGet reads a path as the global admin and reports its status.
	adminGet := func(path string) int { return e.Do("GET", path, e.Admin, nil).Status }

	for _, row := range rows {
		slug := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(row.subject))
		check := func(op string, r *origintest.Response, want int) bool {
			t.Helper()
			if r.Status != want {
				t.Errorf("%s: %s: got %d, want %d; body: %.200s", row.subject, op, r.Status, want, r.Body)
			}
			if r.Status >= 400 && r.ErrorCode() == "" {
				t.Errorf("%s: %s: status %d without an error body: %.200s", row.subject, op, r.Status, r.Body)
			}
			return r.Status < 300
		}
		// agree fails when the state after op does not match its answer.
		agree := func(op string, done bool, state string, wantDone bool) {
			t.Helper()
			if done != wantDone {
				t.Errorf("%s: %s answered %s, but afterwards %s", row.subject, op, map[bool]string{true: "success", false: "refusal"}[done], state)
			}
		}
		do := func(method, path string, body any) *origintest.Response {
			return e.Do(method, path, row.cred, body)
		}
		w := row.want

		check("GET /repositories/:id", do("GET", "/api/v1/repositories/"+fx.repoID, nil), w.getRepo)
		check("GET /artifacts/:id", do("GET", "/api/v1/artifacts/"+fx.artifactID, nil), w.getArt)
		if r := do("GET", "/api/v1/artifacts/"+fx.artifactID+"/download", nil); check("GET /artifacts/:id/download", r, w.download) && string(r.Body) != "base" {
			t.Errorf("%s: download answered %q", row.subject, r.Body)
		}
		if r := do("GET", "/generic/matrix/base/1.0/base.txt", nil); check("generic GET", r, w.genGet) && string(r.Body) != "base" {
			t.Errorf("%s: generic GET answered %q", row.subject, r.Body)
		}

		desc := "set by " + slug
		done := check("PUT /repositories/:id", do("PUT", "/api/v1/repositories/"+fx.repoID, map[string]any{"description": desc}), w.putRepo)
		agree("PUT /repositories/:id", done, "description is "+getRepo(e, fx.repoID).Description, getRepo(e, fx.repoID).Description == desc)

		newPath := "/generic/matrix/new/1.0/" + slug + ".txt"
		done = check("generic PUT (new file)", do("PUT", newPath, "new by "+slug), w.genPut)
		st := adminGet(newPath)
		agree("generic PUT (new file)", done, fmt.Sprintf("GET answers %d", st), st == 200)

		victim := "matrix/victim/1.0/" + slug + "-generic.txt"
		put(e, e.Admin, victim, "victim")
		done = check("generic DELETE", do("DELETE", "/generic/"+victim, nil), w.genDel)
		st = adminGet("/generic/" + victim)
		agree("generic DELETE", done, fmt.Sprintf("GET answers %d", st), st == 404)

		a := put(e, e.Admin, "matrix/victim/1.0/"+slug+"-api.txt", "victim")
		done = check("DELETE /artifacts/:id", do("DELETE", "/api/v1/artifacts/"+a.ID, nil), w.delArt)
		st = adminGet("/api/v1/artifacts/" + a.ID)
		agree("DELETE /artifacts/:id", done, fmt.Sprintf("GET answers %d", st), st == 404)

		done = check("DELETE /repositories/:id", do("DELETE", "/api/v1/repositories/"+fx.repoID, nil), w.delRepo)
		st = adminGet("/api/v1/repositories/" + fx.repoID)
		agree("DELETE /repositories/:id", done, fmt.Sprintf("GET answers %d", st), st == 404)
		if st == 404 {
			build()
		}
	}
}
