package api_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

type loginResponse struct {
	AccessToken            string `json:"access_token"`
	RefreshToken           string `json:"refresh_token"`
	ExpiresIn              int64  `json:"expires_in"`
	TokenType              string `json:"token_type"`
	PasswordChangeRequired bool   `json:"password_change_required"`
}

func login(e *origintest.Env, name, pass string) loginResponse {
	e.T.Helper()
	var out loginResponse
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": name, "password": pass}).Want(200).JSON(&out)
	return out
}

func TestLogin(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})

	t.Run("ok", func(t *testing.T) {
		e := e.For(t)
		out := login(e, "admin", origintest.AdminPassword)
		if out.AccessToken == "" || out.RefreshToken == "" || out.AccessToken == out.RefreshToken {
			t.Fatalf("want distinct access and refresh tokens, got %+v", out)
		}
		if out.ExpiresIn != 900 || out.TokenType != "Bearer" || out.PasswordChangeRequired {
			t.Fatalf("expires_in %d token_type %q password_change_required %v; want 900, Bearer, false",
				out.ExpiresIn, out.TokenType, out.PasswordChangeRequired)
		}
		me := e.Do("GET", "/api/v1/users/me", out.AccessToken, nil).Want(200).Map()
		if me["username"] != "admin" || me["role"] != "admin" {
			t.Fatalf("users/me with the new token: %v", me)
		}
		if _, ok := me["password_hash"]; ok {
			t.Fatalf("users/me leaks the password hash: %v", me)
		}
		// The username is case-insensitive.
		login(e, "ADMIN", origintest.AdminPassword)
	})

	t.Run("wrong password", func(t *testing.T) {
		e := e.For(t)
		for _, body := range []map[string]string{
			{"username": "admin", "password": "not-the-password"},
			{"username": "nobody", "password": "not-the-password"},
		} {
			r := e.Do("POST", "/api/v1/auth/login", "", body).WantError(401, "UNAUTHORIZED")
			if r.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate for %v", body)
			}
			if strings.Contains(string(r.Body), "access_token") {
				t.Fatalf("failed login issued a token: %s", r.Body)
			}
		}
	})

	t.Run("missing fields", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{}).WantError(400, "VALIDATION_FAILED").WantField("username")
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin"}).WantError(400, "VALIDATION_FAILED").WantField("password")
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"password": "x"}).WantError(400, "VALIDATION_FAILED").WantField("username")
	})

	t.Run("malformed body", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/auth/login", "", `{"username":`).WantError(400, "BAD_REQUEST")
		e.Do("POST", "/api/v1/auth/login", "", "").WantError(400, "BAD_REQUEST")
		e.Do("POST", "/api/v1/auth/login", "", `{"username":1,"password":"x"}`).WantError(400, "VALIDATION_FAILED").WantField("username")
	})

	t.Run("bad credentials on the API are 401", func(t *testing.T) {
		e := e.For(t)
		for _, cred := range []string{"not-a-jwt", "a.b.c", "dpt_doesnotexist", basic("admin", "wrong-password"), "Basic !!!", "Weird scheme"} {
			r := e.Do("GET", "/api/v1/users/me", cred, nil).WantError(401, "UNAUTHORIZED")
			if r.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 for %q without WWW-Authenticate", cred)
			}
		}
		e.Do("GET", "/api/v1/users/me", "", nil).WantError(401, "UNAUTHORIZED")
	})
}

func TestRefreshAndLogout(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	u := newUser(e, "alice", "user")

	t.Run("refresh", func(t *testing.T) {
		e := e.For(t)
		s := login(e, u.name, userPW)
		var out struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			ExpiresIn    int64  `json:"expires_in"`
		}
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken}).Want(200).JSON(&out)
		if out.AccessToken == "" || out.ExpiresIn != 900 {
			t.Fatalf("refresh answered %+v", out)
		}
		if me := e.Do("GET", "/api/v1/users/me", out.AccessToken, nil).Want(200).Map(); me["id"] != u.id {
			t.Fatalf("refreshed token belongs to %v, want %s", me["id"], u.id)
		}
	})

	t.Run("bad refresh token", func(t *testing.T) {
		e := e.For(t)
		s := login(e, u.name, userPW)
		for _, tok := range []string{"garbage", "a.b.c", s.AccessToken, s.RefreshToken + "x"} {
			e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": tok}).WantError(401, "UNAUTHORIZED")
		}
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{}).WantError(400, "VALIDATION_FAILED").WantField("refresh_token")
		// A refresh token is not an access token.
		e.Do("GET", "/api/v1/users/me", s.RefreshToken, nil).WantError(401, "UNAUTHORIZED")
	})

	t.Run("logout revokes the session's access and refresh tokens", func(t *testing.T) {
		e := e.For(t)
		s := login(e, u.name, userPW)
		other := login(e, u.name, userPW)
		r := e.Do("POST", "/api/v1/auth/logout", s.AccessToken, nil).Want(204)
		if len(r.Body) != 0 {
			t.Fatalf("logout answered a body: %s", r.Body)
		}
		e.Do("GET", "/api/v1/users/me", s.AccessToken, nil).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken}).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/auth/logout", s.AccessToken, nil).WantError(401, "UNAUTHORIZED")
		// Another session of the same user is untouched.
		e.Do("GET", "/api/v1/users/me", other.AccessToken, nil).Want(200)
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": other.RefreshToken}).Want(200)
	})

	t.Run("logout of a refreshed token ends the whole session", func(t *testing.T) {
		e := e.For(t)
		s := login(e, u.name, userPW)
		var ref loginResponse
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken}).Want(200).JSON(&ref)
		e.Do("POST", "/api/v1/auth/logout", ref.AccessToken, nil).Want(204)
		e.Do("GET", "/api/v1/users/me", s.AccessToken, nil).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": s.RefreshToken}).WantError(401, "UNAUTHORIZED")
	})

	t.Run("logout with an API token", func(t *testing.T) {
		e := e.For(t)
		tok := e.Token(u.token, []string{"repository:read"}, nil)
		e.Do("POST", "/api/v1/auth/logout", tok, nil).WantError(400, "BAD_REQUEST")
		e.Do("GET", "/api/v1/users/me", tok, nil).Want(200)
	})

	t.Run("logout anonymously", func(t *testing.T) {
		e := e.For(t)
		e.Do("POST", "/api/v1/auth/logout", "", nil).WantError(401, "UNAUTHORIZED")
	})
}

func TestForcedPasswordChange(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true})
	initial := origintest.InitialAdminPassword

	s := login(e, "admin", initial)
	if !s.PasswordChangeRequired {
		t.Fatalf("login with the initial password: password_change_required is false")
	}
	tok := s.AccessToken
	other := login(e, "admin", initial).AccessToken

	me := e.Do("GET", "/api/v1/users/me", tok, nil).Want(200).Map()
	if me["username"] != "admin" || me["password_change_required"] != true {
		t.Fatalf("users/me before the change: %v", me)
	}
	if _, ok := me["must_change_password"]; ok {
		t.Fatalf("the user object names the flag twice: %v", me)
	}

	blocked := []struct{ method, path string }{
		{"GET", "/api/v1/repositories"},
		{"POST", "/api/v1/repositories"},
		{"GET", "/api/v1/users"},
		{"POST", "/api/v1/users"},
		{"GET", "/api/v1/users/me/tokens"},
		{"POST", "/api/v1/users/me/tokens"},
		{"GET", "/api/v1/groups"},
		{"GET", "/api/v1/permissions"},
		{"GET", "/api/v1/packages"},
		{"GET", "/api/v1/admin/stats"},
	}
	for _, b := range blocked {
		var body any
		if b.method == "POST" {
			body = map[string]any{"name": "x", "format": "generic"}
		}
		e.Do(b.method, b.path, tok, body).WantError(403, "PASSWORD_CHANGE_REQUIRED")
	}
	// Basic credentials are held to the same rule.
	e.Do("GET", "/api/v1/repositories", basic("admin", initial), nil).WantError(403, "PASSWORD_CHANGE_REQUIRED")

	t.Run("email only is refused", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"email": "a@example.com"}).WantError(403, "PASSWORD_CHANGE_REQUIRED")
	})
	t.Run("wrong current password", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": "wrong-password", "password": "brand-New-pw1"}).
			WantError(400, "VALIDATION_FAILED").WantField("current_password")
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"password": "brand-New-pw1"}).
			WantError(400, "VALIDATION_FAILED").WantField("current_password")
	})
	t.Run("too short", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": initial, "password": "short"}).
			WantError(400, "VALIDATION_FAILED").WantField("password")
	})
	t.Run("same as before", func(t *testing.T) {
		e := e.For(t)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": initial, "password": initial}).
			WantError(400, "VALIDATION_FAILED").WantField("password")
	})
	// Nothing above changed the password.
	login(e, "admin", initial)

	t.Run("change", func(t *testing.T) {
		e := e.For(t)
		const newPW = "brand-New-pw1"
		me := e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": initial, "password": newPW}).Want(200).Map()
		if me["password_change_required"] != false {
			t.Fatalf("after the change password_change_required is %v", me["password_change_required"])
		}
		// The session that changed the password goes on and may do everything.
		e.Do("GET", "/api/v1/repositories", tok, nil).Want(200)
		e.Do("POST", "/api/v1/repositories", tok, map[string]any{"name": "after", "format": "generic"}).Want(201)
		e.Do("GET", "/api/v1/users", tok, nil).Want(200)
		e.Do("GET", "/api/v1/admin/stats", tok, nil).Want(200)
		// Other sessions were signed out.
		e.Do("GET", "/api/v1/users/me", other, nil).WantError(401, "UNAUTHORIZED")
		// The old password no longer signs in, the new one does.
		e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": initial}).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/users/me", basic("admin", initial), nil).WantError(401, "UNAUTHORIZED")
		if s := login(e, "admin", newPW); s.PasswordChangeRequired {
			t.Fatalf("password_change_required after the change")
		}
		e.Do("PUT", "/generic/after/p/1/f", basic("admin", newPW), "x").Want(201)
	})
}
