package oci_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

func registryToken(t *testing.T, e *origintest.Env, query, cred string) string {
	t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	e.Do("GET", "/v2/token?service=x"+query, cred, nil).Want(200).JSON(&tok)
	if tok.Token == "" {
		t.Fatal("token answer without a token")
	}
	return tok.Token
}

// TestRegistryTokenCannotRenewItself: the token realm hands tokens to
// Basic credentials, but a registry token cannot buy its successor under
// any scheme (it would outlive a logout or password change forever).
func TestRegistryTokenCannotRenewItself(t *testing.T) {
	e := start(t)
	e.CreateRepo("imgs", "docker", false)
	tok := registryToken(t, e, "&scope=repository:imgs/app:pull", basic("admin", origintest.AdminPassword))
	e.Do("GET", "/v2/", "Bearer "+tok, nil).Want(200)
	e.Do("GET", "/v2/token?service=x", "Bearer "+tok, nil).Want(401)
	e.Do("GET", "/v2/token?service=x", "Token "+tok, nil).Want(401)
	e.Do("GET", "/v2/token?service=x", "bearer "+tok, nil).Want(401)
	// A login session may still get one.
	e.Do("GET", "/v2/token?service=x", "Bearer "+e.Admin, nil).Want(200)
}

// TestRegistryTokensDieWithTheirCredential: a registry token is not
// accepted on the API (so it cannot mint a permanent admin token) and ends
// with the session, password or API token it came from; an account that
// must still change its initial password gets none.
func TestRegistryTokensDieWithTheirCredential(t *testing.T) {
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true})
	initial := basic("admin", origintest.InitialAdminPassword)
	e.Do("GET", "/v2/token?service=x", initial, nil).Want(403)

	session := e.Login("admin", origintest.InitialAdminPassword)
	e.Do("PUT", "/api/v1/users/me", session, map[string]string{"current_password": origintest.InitialAdminPassword, "password": origintest.AdminPassword}).Want(200)
	e.Do("POST", "/api/v1/repositories", session, map[string]any{"name": "imgs", "format": "docker"}).Want(201)

	fromPassword := registryToken(t, e, "&scope=repository:imgs/app:pull", basic("admin", origintest.AdminPassword))
	fromSession := registryToken(t, e, "&scope=repository:imgs/app:pull", "Bearer "+session)
	for _, tok := range []string{fromPassword, fromSession} {
		e.Do("GET", "/v2/imgs/app/tags/list", "Bearer "+tok, nil).Want(404) // accepted: the image is just not there
		e.Do("GET", "/api/v1/users/me", "Bearer "+tok, nil).WantError(401, "UNAUTHORIZED")
		e.Do("POST", "/api/v1/users/me/tokens", "Bearer "+tok, map[string]any{"name": "forever", "scopes": []string{"admin"}}).WantError(401, "UNAUTHORIZED")
	}

	e.Do("POST", "/api/v1/auth/logout", session, nil).Want(204)
	e.Do("GET", "/v2/imgs/app/tags/list", "Bearer "+fromSession, nil).Want(401)
	e.Do("GET", "/v2/imgs/app/tags/list", "Bearer "+fromPassword, nil).Want(404)

	admin := e.Login("admin", origintest.AdminPassword)
	e.Do("PUT", "/api/v1/users/me", admin, map[string]string{"current_password": origintest.AdminPassword, "password": "a-Third-password-3"}).Want(200)
	e.Do("GET", "/v2/imgs/app/tags/list", "Bearer "+fromPassword, nil).Want(401)
}

// TestRegistryTokenCarriesOnlyTheGrantedScope: a token asked for
// dst/img:pull cannot push into dst, though its user could; the access
// claim is the granted subset of what was asked.
func TestRegistryTokenCarriesOnlyTheGrantedScope(t *testing.T) {
	e := start(t)
	e.CreateRepo("dst", "docker", false)
	e.CreateRepo("other", "docker", false)
	pull := registryToken(t, e, "&scope=repository:dst/img:pull", basic("admin", origintest.AdminPassword))
	r := e.Do("POST", "/v2/dst/img/blobs/uploads/", "Bearer "+pull, nil).Want(401)
	if c := r.Header.Get("WWW-Authenticate"); !strings.Contains(c, `scope="repository:dst/img:pull,push"`) {
		t.Fatalf("challenge %q does not ask for the scope needed", c)
	}
	e.Do("GET", "/v2/other/img/tags/list", "Bearer "+pull, nil).Want(401)
	e.Do("GET", "/v2/_catalog", "Bearer "+pull, nil).Want(401)

	push := registryToken(t, e, "&scope=repository:dst/img:pull,push", basic("admin", origintest.AdminPassword))
	e.Do("POST", "/v2/dst/img/blobs/uploads/", "Bearer "+push, nil).Want(202)

	// The claim says what was granted: a reader asking for push gets pull.
	reader := e.CreateUser("reader", "user", "reader-Password-1")
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": repoID(t, e, "dst"), "user_id": reader, "permissions": []string{"read"}}).Want(201)
	tok := registryToken(t, e, "&scope=repository:dst/img:pull,push&scope=repository:other/img:pull", basic("reader", "reader-Password-1"))
	claims := decodeClaims(t, tok)
	if len(claims.Access) != 1 || claims.Access[0].Name != "dst/img" || strings.Join(claims.Access[0].Actions, ",") != "pull" {
		t.Fatalf("access claim %+v, want dst/img pull only", claims.Access)
	}
}

func repoID(t *testing.T, e *origintest.Env, name string) string {
	t.Helper()
	var out struct {
		Repositories []struct{ ID, Name string } `json:"repositories"`
	}
	e.Do("GET", "/api/v1/repositories?limit=100", e.Admin, nil).Want(200).JSON(&out)
	for _, r := range out.Repositories {
		if r.Name == name {
			return r.ID
		}
	}
	t.Fatalf("no repository %s", name)
	return ""
}

type tokenClaims struct {
	Access []struct {
		Type, Name string
		Actions    []string
	} `json:"access"`
}

func decodeClaims(t *testing.T, tok string) tokenClaims {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c tokenClaims
	if err != nil || json.Unmarshal(raw, &c) != nil {
		t.Fatalf("token payload %q", parts[1])
	}
	return c
}
