package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth"
)

func TestUsers(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	bob := newUser(e, "bob", "user")
	vic := newUser(e, "vic", "viewer")

	t.Run("create", func(t *testing.T) {
		e := e.For(t)
		m := e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "carol", "email": "carol@example.com", "password": userPW, "role": "viewer"}).Want(201).Map()
		if m["id"] == "" || m["username"] != "carol" || m["email"] != "carol@example.com" || m["role"] != "viewer" || m["created_at"] == nil {
			t.Fatalf("create user answered %v", m)
		}
		for _, k := range []string{"password", "password_hash"} {
			if _, ok := m[k]; ok {
				t.Fatalf("create user answers %s: %v", k, m)
			}
		}
		login(e, "carol", userPW)
		// The role defaults to user.
		m = e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "dave", "email": "dave@example.com", "password": userPW}).Want(201).Map()
		if m["role"] != "user" {
			t.Fatalf("default role %v, want user", m["role"])
		}
	})

	t.Run("a directory's user", func(t *testing.T) {
		e := e.For(t)
		// Made before their first sign-in, without a password, so that
		// grants can be given ahead; it cannot sign in with any password
		// here (no directory is configured in this test).
		m := e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "lara", "email": "lara@example.com", "source": "ldap"}).Want(201).Map()
		if m["source"] != "ldap" || m["role"] != "user" {
			t.Fatalf("a directory user: %v", m)
		}
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "lara", "password": ""}).WantError(400, "VALIDATION_FAILED")
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "lara", "password": userPW}).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "olga", "email": "olga@example.com", "source": "oidc", "password": userPW}).WantError(400, "VALIDATION_FAILED").WantField("password")
		e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "olga", "email": "olga@example.com", "source": "kerberos"}).WantError(400, "VALIDATION_FAILED").WantField("source")
		e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
			"username": "lara", "email": "lara@example.com", "source": "oidc"}).WantError(409, "CONFLICT")
	})

	t.Run("list", func(t *testing.T) {
		e := e.For(t)
		r := e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200)
		if b := string(r.Body); strings.Contains(b, "argon2") || strings.Contains(b, "password_hash") || strings.Contains(b, userPW) {
			t.Fatalf("user list leaks passwords: %s", r.Body)
		}
		var out struct {
			Users []struct {
				ID, Username, Email, Role string
				CreatedAt                 string `json:"created_at"`
			} `json:"users"`
		}
		r.JSON(&out)
		seen := map[string]string{}
		for _, u := range out.Users {
			if u.ID == "" || u.Email == "" || u.CreatedAt == "" {
				t.Fatalf("incomplete user in list: %+v", u)
			}
			seen[u.Username] = u.Role
		}
		if seen["admin"] != "admin" || seen["bob"] != "user" || seen["vic"] != "viewer" {
			t.Fatalf("user list %v lacks admin, bob or vic with their roles", seen)
		}
	})

	t.Run("duplicate username", func(t *testing.T) {
		e := e.For(t)
		for _, name := range []string{"bob", "BOB"} {
			e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
				"username": name, "email": "x@example.com", "password": userPW}).WantError(409, "CONFLICT")
		}
	})

	t.Run("validation", func(t *testing.T) {
		e := e.For(t)
		cases := []struct {
			username, email, password, role, field string
		}{
			{"", "x@example.com", userPW, "user", "username"},
			{"a b", "x@example.com", userPW, "user", "username"},
			{"../x", "x@example.com", userPW, "user", "username"},
			{"-x", "x@example.com", userPW, "user", "username"},
			{strings.Repeat("a", 65), "x@example.com", userPW, "user", "username"},
			{"erin", "", userPW, "user", "email"},
			{"erin", "not-an-email", userPW, "user", "email"},
			{"erin", "Erin <erin@example.com>", userPW, "user", "email"},
			{"erin", "erin@example.com", "short", "user", "password"},
			{"erin", "erin@example.com", userPW, "superuser", "role"},
			{"erin", "erin@example.com", userPW, "Admin", "role"},
		}
		for _, c := range cases {
			e.Do("POST", "/api/v1/users", e.Admin, map[string]string{
				"username": c.username, "email": c.email, "password": c.password, "role": c.role}).
				WantError(400, "VALIDATION_FAILED").WantField(c.field)
		}
		// None of them was created.
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "erin", "password": userPW}).WantError(401, "UNAUTHORIZED")
	})

	t.Run("non-admins", func(t *testing.T) {
		e := e.For(t)
		for _, tok := range []string{bob.token, vic.token} {
			e.Do("GET", "/api/v1/users", tok, nil).WantError(403, "FORBIDDEN")
			e.Do("POST", "/api/v1/users", tok, map[string]string{
				"username": "mallory", "email": "m@example.com", "password": userPW, "role": "admin"}).WantError(403, "FORBIDDEN")
			e.Do("DELETE", "/api/v1/users/"+vic.id, tok, nil).WantError(403, "FORBIDDEN")
		}
		e.Do("GET", "/api/v1/users", "", nil).WantError(401, "UNAUTHORIZED")
		// An admin's token without the admin scope is not an admin.
		tok := e.Token(e.Admin, []string{"repository:admin"}, nil)
		e.Do("GET", "/api/v1/users", tok, nil).WantError(403, "FORBIDDEN")
		tok = e.Token(e.Admin, []string{"admin"}, nil)
		e.Do("GET", "/api/v1/users", tok, nil).Want(200)
	})

	t.Run("me", func(t *testing.T) {
		e := e.For(t)
		me := e.Do("GET", "/api/v1/users/me", bob.token, nil).Want(200).Map()
		if me["id"] != bob.id || me["username"] != "bob" || me["role"] != "user" {
			t.Fatalf("users/me %v", me)
		}
		me = e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{"email": "bob2@example.com"}).Want(200).Map()
		if me["email"] != "bob2@example.com" {
			t.Fatalf("email after update %v", me["email"])
		}
		e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{"email": "nope"}).WantError(400, "VALIDATION_FAILED").WantField("email")
		// The display name: set with the email in one request, refused
		// when not one line of plain text (and then nothing changes),
		// cleared with "".
		me = e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{"display_name": "Bob Builder", "email": "bob3@example.com"}).Want(200).Map()
		if me["display_name"] != "Bob Builder" || me["email"] != "bob3@example.com" {
			t.Fatalf("after setting the display name %v", me)
		}
		for _, bad := range []string{"Bob\nBuilder", " Bob", strings.Repeat("b", 257), "Bob\x00"} {
			e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{"display_name": bad, "email": "bob4@example.com"}).WantError(400, "VALIDATION_FAILED").WantField("display_name")
		}
		if me = e.Do("GET", "/api/v1/users/me", bob.token, nil).Want(200).Map(); me["display_name"] != "Bob Builder" || me["email"] != "bob3@example.com" {
			t.Fatalf("a refused change changed %v", me)
		}
		if me = e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{"display_name": ""}).Want(200).Map(); me["display_name"] != "" {
			t.Fatalf("display name not cleared: %v", me)
		}
		e.Do("PUT", "/api/v1/users/me", bob.token, map[string]string{}).WantError(400, "VALIDATION_FAILED")
		// An API token cannot change the password.
		tok := e.Token(bob.token, []string{"repository:read"}, nil)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": userPW, "password": "another-Pw-123"}).WantError(403, "FORBIDDEN")
		login(e, "bob", userPW)
	})

	t.Run("delete", func(t *testing.T) {
		e := e.For(t)
		gone := newUser(e, "gone", "user")
		tok := e.Token(gone.token, []string{"repository:read"}, nil)
		e.Do("GET", "/api/v1/users/me", tok, nil).Want(200)
		r := e.Do("DELETE", "/api/v1/users/"+gone.id, e.Admin, nil).Want(204)
		if len(r.Body) != 0 {
			t.Fatalf("delete answered a body: %s", r.Body)
		}
		e.Do("GET", "/api/v1/users/me", gone.token, nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/users/me", tok, nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/users/me", basic("gone", userPW), nil).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "gone", "password": userPW}).WantError(401, "UNAUTHORIZED")
		if strings.Contains(string(e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).Body), gone.id) {
			t.Fatalf("deleted user still listed")
		}
		e.Do("DELETE", "/api/v1/users/"+gone.id, e.Admin, nil).WantError(404, "NOT_FOUND")
		// The name is free again.
		newUser(e, "gone", "user")
	})

	t.Run("delete self", func(t *testing.T) {
		e := e.For(t)
		var me struct{ ID string }
		e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200).JSON(&me)
		e.Do("DELETE", "/api/v1/users/"+me.ID, e.Admin, nil).WantError(409, "CONFLICT")
		e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200)
	})
}

type tokenCreated struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	Token     string   `json:"token"`
	Hint      string   `json:"token_hint"`
	ExpiresAt *string  `json:"expires_at"`
}

func TestTokens(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	u := newUser(e, "tina", "user")
	other := newUser(e, "oscar", "user")

	var tc tokenCreated
	r := e.Do("POST", "/api/v1/users/me/tokens", u.token, map[string]any{
		"name": "ci", "scopes": []string{"repository:read", "repository:write:libs"}}).Want(201)
	r.JSON(&tc)
	if !strings.HasPrefix(tc.Token, auth.TokenPrefix) || tc.ID == "" || tc.Name != "ci" || len(tc.Scopes) != 2 || tc.ExpiresAt != nil {
		t.Fatalf("create token answered %s", r.Body)
	}
	if _, ok := r.Map()["hash"]; ok {
		t.Fatalf("create token answers the hash: %s", r.Body)
	}

	t.Run("works as bearer", func(t *testing.T) {
		e := e.For(t)
		if me := e.Do("GET", "/api/v1/users/me", tc.Token, nil).Want(200).Map(); me["id"] != u.id {
			t.Fatalf("token authenticates as %v, want %s", me["id"], u.id)
		}
	})

	t.Run("list hides the secret", func(t *testing.T) {
		e := e.For(t)
		expires := time.Now().Add(time.Hour)
		second := e.Token(u.token, []string{"repository:read"}, &expires)
		r := e.Do("GET", "/api/v1/users/me/tokens", u.token, nil).Want(200)
		body := string(r.Body)
		for _, secret := range []string{tc.Token, second} {
			if strings.Contains(body, secret) || strings.Contains(body, auth.HashAPIToken(secret)) {
				t.Fatalf("token list contains a secret or its hash: %s", body)
			}
		}
		var out struct {
			Tokens []map[string]any `json:"tokens"`
		}
		r.JSON(&out)
		if len(out.Tokens) != 2 {
			t.Fatalf("listed %d tokens, want 2: %s", len(out.Tokens), body)
		}
		for _, tok := range out.Tokens {
			for _, k := range []string{"token", "hash", "secret"} {
				if _, ok := tok[k]; ok {
					t.Fatalf("token list item has %q: %v", k, tok)
				}
			}
		}
		if out.Tokens[0]["id"] != tc.ID || out.Tokens[1]["expires_at"] == nil {
			t.Fatalf("token list %v: want ci first and the second with expires_at", out.Tokens)
		}
		// Another user's list does not show them.
		if strings.Contains(string(e.Do("GET", "/api/v1/users/me/tokens", other.token, nil).Want(200).Body), tc.ID) {
			t.Fatalf("oscar sees tina's token")
		}
	})

	t.Run("validation", func(t *testing.T) {
		e := e.For(t)
		bad := []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"name": "x", "scopes": []string{"repository:bogus"}}, "scopes"},
			{map[string]any{"name": "x", "scopes": []string{"bogus"}}, "scopes"},
			{map[string]any{"name": "x", "scopes": []string{"repository:write:../x"}}, "scopes"},
			{map[string]any{"name": "x", "scopes": []string{}}, "scopes"},
			{map[string]any{"name": "x"}, "scopes"},
			{map[string]any{"name": "x", "scopes": []string{"admin"}}, "scopes"}, // only admins get the admin scope
			{map[string]any{"name": "", "scopes": []string{"repository:read"}}, "name"},
			{map[string]any{"name": "x", "scopes": []string{"repository:read"}, "expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}, "expires_at"},
		}
		for _, c := range bad {
			e.Do("POST", "/api/v1/users/me/tokens", u.token, c.body).WantError(400, "VALIDATION_FAILED").WantField(c.field)
		}
		e.Do("POST", "/api/v1/users/me/tokens", u.token, map[string]any{"name": "x", "scopes": []string{"repository:read"}, "expires_at": "yesterday"}).
			Want(400)
	})

	t.Run("an API token cannot create tokens", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/users/me/tokens", tc.Token, map[string]any{"name": "y", "scopes": []string{"repository:read"}}).WantError(403, "FORBIDDEN")
		admin := e.Token(e.Admin, []string{"repository:admin"}, nil)
		e.Do("POST", "/api/v1/users/me/tokens", admin, map[string]any{"name": "y", "scopes": []string{"repository:read"}}).WantError(403, "FORBIDDEN")
	})

	t.Run("revoke", func(t *testing.T) {
		e := e.For(t)
		tok := e.Token(u.token, []string{"repository:read"}, nil)
		var list struct {
			Tokens []struct{ ID string } `json:"tokens"`
		}
		e.Do("GET", "/api/v1/users/me/tokens", u.token, nil).Want(200).JSON(&list)
		id := list.Tokens[len(list.Tokens)-1].ID
		e.Do("GET", "/api/v1/users/me", tok, nil).Want(200)
		// Someone else cannot revoke it.
		e.Do("DELETE", "/api/v1/users/me/tokens/"+id, other.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/users/me", tok, nil).Want(200)
		e.Do("DELETE", "/api/v1/users/me/tokens/"+id, u.token, nil).Want(204)
		e.Do("GET", "/api/v1/users/me", tok, nil).WantError(401, "UNAUTHORIZED")
		e.Do("DELETE", "/api/v1/users/me/tokens/"+id, u.token, nil).WantError(404, "NOT_FOUND")
		// The other token is untouched.
		e.Do("GET", "/api/v1/users/me", tc.Token, nil).Want(200)
	})
}

func TestGroups(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	a := newUser(e, "anna", "user")
	b := newUser(e, "ben", "viewer")

	var g struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Members     []string `json:"members"`
	}
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "devs", "description": "developers"}).Want(201).JSON(&g)
	if g.ID == "" || g.Name != "devs" || g.Description != "developers" || g.Members == nil || len(g.Members) != 0 {
		t.Fatalf("create group answered %+v", g)
	}

	t.Run("create", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "devs"}).WantError(409, "CONFLICT")
		e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "DEVS"}).WantError(409, "CONFLICT")
		e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": ""}).WantError(400, "VALIDATION_FAILED").WantField("name")
		e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "a/b"}).WantError(400, "VALIDATION_FAILED").WantField("name")
		e.Do("POST", "/api/v1/groups", a.token, map[string]string{"name": "mine"}).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/groups", "", map[string]string{"name": "mine"}).WantError(401, "UNAUTHORIZED")
	})

	t.Run("list", func(t *testing.T) {
		e := e.For(t)
		var out struct {
			Groups []struct{ ID, Name string } `json:"groups"`
		}
		e.Do("GET", "/api/v1/groups", e.Admin, nil).Want(200).JSON(&out)
		if len(out.Groups) != 1 || out.Groups[0].ID != g.ID {
			t.Fatalf("group list %+v", out.Groups)
		}
		// Anyone else sees only the groups they belong to.
		outsider := newUser(e, "outsider", "user")
		out.Groups = nil
		e.Do("GET", "/api/v1/groups", outsider.token, nil).Want(200).JSON(&out)
		if len(out.Groups) != 0 {
			t.Fatalf("a non-member listed groups: %+v", out.Groups)
		}
	})

	t.Run("members", func(t *testing.T) {
		e := e.For(t)
		path := "/api/v1/groups/" + g.ID + "/members"
		var got struct {
			Members []string `json:"members"`
		}
		e.Do("POST", path, e.Admin, map[string]any{"user_ids": []string{a.id, b.id}}).Want(200).JSON(&got)
		if len(got.Members) != 2 || !contains(got.Members, a.id) || !contains(got.Members, b.id) {
			t.Fatalf("members %v, want %s and %s", got.Members, a.id, b.id)
		}
		// Adding again does not duplicate.
		e.Do("POST", path, e.Admin, map[string]any{"user_ids": []string{a.id}}).Want(200).JSON(&got)
		if len(got.Members) != 2 {
			t.Fatalf("members after re-adding: %v", got.Members)
		}
		e.Do("POST", path, e.Admin, map[string]any{"user_ids": []string{a.id, "no-such-user"}}).WantError(400, "VALIDATION_FAILED").WantField("user_ids")
		e.Do("POST", path, e.Admin, map[string]any{"user_ids": []string{}}).WantError(400, "VALIDATION_FAILED").WantField("user_ids")
		// Taken out by username (administrators only), and again: nothing to do.
		e.Do("DELETE", path+"/ben", a.token, nil).WantError(403, "FORBIDDEN")
		for range 2 {
			e.Do("DELETE", path+"/ben", e.Admin, nil).Want(200).JSON(&got)
			if len(got.Members) != 1 || got.Members[0] != a.id {
				t.Fatalf("members after taking ben out: %v", got.Members)
			}
		}
		e.Do("DELETE", path+"/nobody", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("POST", path, e.Admin, map[string]any{"user_ids": []string{b.id}}).Want(200)
		e.Do("POST", "/api/v1/groups/no-such-group/members", e.Admin, map[string]any{"user_ids": []string{a.id}}).WantError(404, "NOT_FOUND")
		e.Do("POST", path, a.token, map[string]any{"user_ids": []string{a.id}}).WantError(403, "FORBIDDEN")
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	libs := e.CreateRepo("libs", "generic", false)
	apps := e.CreateRepo("apps", "generic", false)
	owner := newUser(e, "owner", "user")   // admin permission on libs
	writer := newUser(e, "writer", "user") // write on libs
	u := newUser(e, "plain", "user")
	var group struct{ ID string }
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": "team"}).Want(201).JSON(&group)
	e.Grant(libs, owner.id, false, "admin")
	e.Grant(libs, writer.id, false, "write")

	type perm struct {
		ID           string   `json:"id"`
		RepositoryID string   `json:"repository_id"`
		UserID       string   `json:"user_id"`
		GroupID      string   `json:"group_id"`
		Permissions  []string `json:"permissions"`
	}
	listIDs := func(e *origintest.Env, tok, query string) []string {
		e.T.Helper()
		var out struct {
			Permissions []perm `json:"permissions"`
		}
		e.Do("GET", "/api/v1/permissions"+query, tok, nil).Want(200).JSON(&out)
		var ids []string
		for _, p := range out.Permissions {
			ids = append(ids, p.ID)
		}
		return ids
	}

	t.Run("create, use, list, delete", func(t *testing.T) {
		e := e.For(t)
		e.Do("GET", "/api/v1/repositories/"+libs, u.token, nil).WantError(403, "FORBIDDEN")
		var p perm
		e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{
			"repository_id": libs, "user_id": u.id, "permissions": []string{"read", "read"}}).Want(201).JSON(&p)
		if p.ID == "" || p.RepositoryID != libs || p.UserID != u.id || p.GroupID != "" || len(p.Permissions) != 1 || p.Permissions[0] != "read" {
			t.Fatalf("create permission answered %+v", p)
		}
		e.Do("GET", "/api/v1/repositories/"+libs, u.token, nil).Want(200)
		e.Do("PUT", "/generic/libs/p/1/f", u.token, "x").WantError(403, "FORBIDDEN")

		if ids := listIDs(e, e.Admin, ""); !contains(ids, p.ID) || len(ids) != 3 {
			t.Fatalf("admin lists %v, want 3 grants including %s", ids, p.ID)
		}
		if ids := listIDs(e, e.Admin, "?repository_id="+apps); len(ids) != 0 {
			t.Fatalf("grants of apps: %v, want none", ids)
		}
		// A user sees their own grants; a repository admin sees the repository's.
		if ids := listIDs(e, u.token, ""); len(ids) != 1 || ids[0] != p.ID {
			t.Fatalf("plain lists %v, want only %s", ids, p.ID)
		}
		if ids := listIDs(e, owner.token, ""); len(ids) != 3 {
			t.Fatalf("owner of libs lists %v, want all 3 grants of libs", ids)
		}

		e.Do("DELETE", "/api/v1/permissions/"+p.ID, e.Admin, nil).Want(204)
		e.Do("DELETE", "/api/v1/permissions/"+p.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/repositories/"+libs, u.token, nil).WantError(403, "FORBIDDEN")
	})

	t.Run("group grant", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/groups/"+group.ID+"/members", e.Admin, map[string]any{"user_ids": []string{u.id}}).Want(200)
		var p perm
		e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{
			"repository_id": apps, "group_id": group.ID, "permissions": []string{"write"}}).Want(201).JSON(&p)
		if p.GroupID != group.ID || p.UserID != "" {
			t.Fatalf("group grant answered %+v", p)
		}
		e.Do("PUT", "/generic/apps/p/1/f", u.token, "x").Want(201)
		if ids := listIDs(e, u.token, ""); !contains(ids, p.ID) {
			t.Fatalf("member does not see the group's grant: %v", ids)
		}
	})

	t.Run("validation", func(t *testing.T) {
		e := e.For(t)
		cases := []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"repository_id": libs, "user_id": u.id, "group_id": group.ID, "permissions": []string{"read"}}, "user_id"},
			{map[string]any{"repository_id": libs, "permissions": []string{"read"}}, "user_id"},
			{map[string]any{"repository_id": libs, "user_id": u.id, "permissions": []string{"execute"}}, "permissions"},
			{map[string]any{"repository_id": libs, "user_id": u.id, "permissions": []string{"read", "READ"}}, "permissions"},
			{map[string]any{"repository_id": libs, "user_id": u.id, "permissions": []string{}}, "permissions"},
			{map[string]any{"repository_id": "no-such-repo", "user_id": u.id, "permissions": []string{"read"}}, "repository_id"},
			{map[string]any{"user_id": u.id, "permissions": []string{"read"}}, "repository_id"},
			{map[string]any{"repository_id": libs, "user_id": "no-such-user", "permissions": []string{"read"}}, "user_id"},
			{map[string]any{"repository_id": libs, "group_id": "no-such-group", "permissions": []string{"read"}}, "group_id"},
		}
		for _, c := range cases {
			e.Do("POST", "/api/v1/permissions", e.Admin, c.body).WantError(400, "VALIDATION_FAILED").WantField(c.field)
		}
	})

	t.Run("only repository admins manage grants", func(t *testing.T) {
		e := e.For(t)
		body := map[string]any{"repository_id": libs, "user_id": u.id, "permissions": []string{"write"}}
		e.Do("POST", "/api/v1/permissions", writer.token, body).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/permissions", u.token, body).WantError(403, "FORBIDDEN")
		e.Do("POST", "/api/v1/permissions", "", body).WantError(401, "UNAUTHORIZED")
		// The owner may manage libs, and nothing else.
		var p perm
		e.Do("POST", "/api/v1/permissions", owner.token, body).Want(201).JSON(&p)
		e.Do("PUT", "/generic/libs/p/1/g", u.token, "x").Want(201)
		e.Do("POST", "/api/v1/permissions", owner.token, map[string]any{"repository_id": apps, "user_id": u.id, "permissions": []string{"admin"}}).
			WantError(403, "FORBIDDEN")
		e.Do("DELETE", "/api/v1/permissions/"+p.ID, writer.token, nil).WantError(403, "FORBIDDEN")
		e.Do("DELETE", "/api/v1/permissions/"+p.ID, owner.token, nil).Want(204)
		e.Do("PUT", "/generic/libs/p/1/h", u.token, "x").WantError(404, "NOT_FOUND") // libs is private: u no longer sees it
		// A token's scopes bound grant management too.
		tok := e.Token(owner.token, []string{"repository:read:libs"}, nil)
		e.Do("POST", "/api/v1/permissions", tok, body).WantError(403, "FORBIDDEN")
	})
}
