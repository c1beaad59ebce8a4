package origin_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth/oidc/oidctest"
)

// ssoOrigins starts two origins (one cluster's balancer in front of them,
// as far as the flow can tell: the same JWT secret, the provider sending
// the browser back to the second one) signing users in with a real
// OpenID provider; members of its group "admins" are administrators.
func ssoOrigins(t *testing.T) (a, b *origintest.Env) {
	t.Helper()
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://" + lnB.Addr().String() + "/api/v1/auth/oidc/callback"
	issuer := oidctest.Start(t, callback)
	start := func(ln net.Listener) *origintest.Env {
		return origintest.Start(t, origintest.Options{Listener: ln, Config: func(c *origin.Config) {
			c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.ClientSecret = issuer, oidctest.ClientID, oidctest.ClientSecret
			c.OIDC.RedirectURI, c.OIDC.Scopes = callback, "openid,email,profile,groups"
			c.OIDC.RoleGroups = "admin=admins"
		}})
	}
	return start(lnA), start(lnB)
}

// browser is an HTTP client that keeps cookies, as a browser does.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

// TestOIDCSignIn drives the code flow with a real provider: begun at one
// origin, completed at the other, the user created from the claims with
// its groups mapped, the tokens in the body of the callback's answer; a
// tampered state, a replayed code and a callback without the flow cookie
// are refused.
func TestOIDCSignIn(t *testing.T) {
	a, b := ssoOrigins(t)
	c := browser(t)
	resp, err := c.Get(a.URL + "/api/v1/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	// Stop at the callback to look at it before the origin answers.
	heldAt := stopAtCallback(c)
	oidctest.LogIn(t, c, resp, "alice").Body.Close()
	callback := heldAt()
	if callback == nil || callback.Host != strings.TrimPrefix(b.URL, "http://") || callback.Query().Get("code") == "" {
		t.Fatalf("the provider sent the browser to %v", callback)
	}

	// A state that is not the one sent is refused.
	forged := *callback
	q := forged.Query()
	q.Set("state", "forged-"+q.Get("state"))
	forged.RawQuery = q.Encode()
	if r := get(t, c, forged.String()); r.status != 400 || !strings.Contains(r.body, "state") {
		t.Fatalf("a forged state: %d %s", r.status, r.body)
	}
	// The flow cookie went with that refusal: the real callback now lacks it.
	if r := get(t, c, callback.String()); r.status != 400 || !strings.Contains(r.body, "not started here") {
		t.Fatalf("a callback without the flow: %d %s", r.status, r.body)
	}

	// A whole flow again, followed to the end.
	c = browser(t)
	resp, err = c.Get(a.URL + "/api/v1/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	var final *url.URL
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error { final = req.URL; return nil }
	end := oidctest.LogIn(t, c, resp, "alice")
	body, _ := io.ReadAll(end.Body)
	end.Body.Close()
	if end.StatusCode != 200 || end.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("callback answered %d %v: %s", end.StatusCode, end.Header, body)
	}
	if strings.Contains(final.String(), "access_token") || strings.Contains(final.String(), "eyJ") {
		t.Fatalf("a token in a URL: %s", final)
	}
	var pair struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &pair); err != nil || pair.AccessToken == "" || pair.RefreshToken == "" {
		t.Fatalf("callback body %s (%v)", body, err)
	}
	alice := "Bearer " + pair.AccessToken
	me := b.Do("GET", "/api/v1/users/me", alice, nil).Want(200).Map()
	if me["username"] != "alice" || me["source"] != "oidc" || me["role"] != "admin" || me["email"] != "alice@example.org" || me["display_name"] != "Alice Admin" {
		t.Fatalf("alice: %v", me)
	}
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	b.Do("GET", "/api/v1/groups", alice, nil).Want(200).JSON(&groups)
	if len(groups.Groups) != 2 {
		t.Fatalf("alice's groups: %+v", groups.Groups)
	}

	// The code of that flow cannot be used again.
	if r := get(t, browser(t), final.String()); r.status != 400 {
		t.Fatalf("a replayed code: %d %s", r.status, r.body)
	}

	// Her API token works with a client's Basic credentials.
	var tok struct{ Token string }
	b.Do("POST", "/api/v1/users/me/tokens", alice, map[string]any{"name": "ci", "scopes": []string{"admin"}}).Want(201).JSON(&tok)
	b.CreateRepo("files", "generic", false)
	b.Do("PUT", "/generic/files/x/1/x.txt", basic("alice", tok.Token), "bytes").Want(201)
}

// TestOIDCTampering: the flow's nonce, PKCE challenge and cookie bind the
// callback to the sign-in this origin began, against a real provider.
// The authorization URL the origin redirects to is altered on its way to
// the provider, which then goes along with it: (a) another nonce ends in
// an ID token carrying that nonce, refused at the callback; (b) another
// code_challenge binds the code to it, so the provider refuses the
// exchange with the flow's verifier, and the callback is a 400 to start
// again (not a 503 as if the provider were away). (c) A flow cookie with
// one character changed, of its MACed content or of its MAC, is refused
// before the code is used: the same callback with the cookie as the
// origin set it then signs in. No refusal creates a user.
func TestOIDCTampering(t *testing.T) {
	a, b := ssoOrigins(t)
	users := func() (names []string) {
		t.Helper()
		var list struct {
			Users []struct{ Username string } `json:"users"`
		}
		b.Do("GET", "/api/v1/users", b.Admin, nil).Want(200).JSON(&list)
		for _, u := range list.Users {
			names = append(names, u.Username)
		}
		return names
	}

	for _, tc := range []struct {
		param string
		want  []string
	}{
		{"nonce", []string{"ID token's nonce differs"}},
		{"code_challenge", []string{"provider refused the code", "invalid_grant"}},
	} {
		br := browser(t)
		auth, _ := beginOIDC(t, br, a)
		q := auth.Query()
		if q.Get(tc.param) == "" {
			t.Fatalf("no %s in the authorization URL %s", tc.param, auth)
		}
		q.Set(tc.param, alter(q.Get(tc.param), 5))
		auth.RawQuery = q.Encode()
		resp, err := br.Get(auth.String())
		if err != nil {
			t.Fatal(err)
		}
		end := oidctest.LogIn(t, br, resp, "bob")
		body, _ := io.ReadAll(end.Body)
		end.Body.Close()
		refused := strings.HasSuffix(end.Request.URL.Path, "/auth/oidc/callback") && end.StatusCode == 400
		for _, w := range tc.want {
			refused = refused && strings.Contains(string(body), w)
		}
		if !refused {
			t.Fatalf("another %s: %s answered %d %s", tc.param, end.Request.URL, end.StatusCode, body)
		}
	}
	if slices.Contains(users(), "bob") {
		t.Fatalf("a refused sign-in created bob: %v", users())
	}

	// (c) The flow up to the provider's redirect to the callback, which
	// is held back.
	c := browser(t)
	auth, cookie := beginOIDC(t, c, a)
	resp, err := c.Get(auth.String())
	if err != nil {
		t.Fatal(err)
	}
	heldAt := stopAtCallback(c)
	oidctest.LogIn(t, c, resp, "bob").Body.Close()
	callback := heldAt()
	if callback == nil {
		t.Fatal("the provider did not send the browser to the callback")
	}
	data, sig, ok := strings.Cut(cookie.Value, ".")
	if !ok {
		t.Fatalf("flow cookie %q: no MAC", cookie.Value)
	}
	content, err := base64.RawURLEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	// The last digit of the flow's expiry changed: a flow still valid,
	// had the MAC not covered it.
	later := bytes.Clone(content)
	i := bytes.LastIndexAny(later, "0123456789")
	later[i] = "1234567890"[later[i]-'0']
	for what, v := range map[string]string{
		"its content": base64.RawURLEncoding.EncodeToString(later) + "." + sig,
		"its MAC":     data + "." + alter(sig, 3),
	} {
		setFlowCookie(t, c, a, cookie, v)
		if r := get(t, c, callback.String()); r.status != 400 || !strings.Contains(r.body, "not started here") {
			t.Fatalf("a flow cookie with one character of %s changed: %d %s", what, r.status, r.body)
		}
	}
	if slices.Contains(users(), "bob") {
		t.Fatalf("a refused sign-in created bob: %v", users())
	}
	setFlowCookie(t, c, a, cookie, cookie.Value)
	if r := get(t, c, callback.String()); r.status != 200 || !slices.Contains(users(), "bob") {
		t.Fatalf("the same callback with the flow cookie as set: %d %s", r.status, r.body)
	}
}

// beginOIDC starts a sign-in at e with c without following the redirect:
// the provider's authorization URL it points to, and the flow cookie.
func beginOIDC(t *testing.T, c *http.Client, e *origintest.Env) (*url.URL, *http.Cookie) {
	t.Helper()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(e.URL + "/api/v1/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.CheckRedirect = nil
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("login: %d, Location %v (%v)", resp.StatusCode, loc, err)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "depot_oidc_flow" {
			return loc, ck
		}
	}
	t.Fatalf("login set no flow cookie: %v", resp.Header["Set-Cookie"])
	return nil, nil
}

// setFlowCookie puts the flow cookie set by e's login in c's jar with
// value v (in place of the one there, or of none).
func setFlowCookie(t *testing.T, c *http.Client, e *origintest.Env, set *http.Cookie, v string) {
	t.Helper()
	u, _ := url.Parse(e.URL)
	ck := *set
	ck.Value = v
	c.Jar.SetCookies(u, []*http.Cookie{&ck})
}

// alter changes the character at i of a base64url string to another one
// of that alphabet. (Not the last character: its low bits may be padding
// a decoder ignores.)
func alter(s string, i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	j := strings.IndexByte(alphabet, s[i])
	return s[:i] + string(alphabet[(j+1)%len(alphabet)]) + s[i+1:]
}

// stopAtCallback makes c stop at the provider's redirect to the callback
// (not followed); the returned func gives where it would have gone.
func stopAtCallback(c *http.Client) func() *url.URL {
	var at *url.URL
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if strings.HasSuffix(req.URL.Path, "/auth/oidc/callback") {
			at = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	return func() *url.URL { return at }
}

type answer struct {
	status int
	body   string
}

func get(t *testing.T, c *http.Client, u string) answer {
	t.Helper()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(u)
	if err != nil && !errors.Is(err, http.ErrUseLastResponse) {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b)}
}

// TestOIDCThroughEdge: a sign-in begun at an edge (under its own host
// name) is forwarded to an origin, the provider sends the browser back to
// the edge's callback, where the flow cookie is, and the session it opens
// works at the edge.
func TestOIDCThroughEdge(t *testing.T) {
	e := clienttest.StartWithSSOThroughEdge(t)
	bob := "Bearer " + clienttest.SignInWithSSO(t, e, "bob") // begun at the edge
	if me := e.Do("GET", "/api/v1/users/me", bob, nil).Want(200).Map(); me["username"] != "bob" || me["source"] != "oidc" {
		t.Fatalf("bob at the edge: %v", me)
	}
}

// TestOIDCDisableThroughEdge: an administrator disables a single sign-on
// user who signed in through an edge. The session that sign-in opened
// and the API token the user made, both working at the origin and at the
// edge until then (the token for a download and an upload with Basic
// credentials too), are refused at the origin at once and at the edge
// within seconds; signing in again with the provider, which still vouches
// for the user, is refused with 403 (no tokens) and leaves the user
// disabled.
func TestOIDCDisableThroughEdge(t *testing.T) {
	e := clienttest.StartWithSSOThroughEdge(t)
	origin := e.For(t)
	origin.URL = e.Server.URL // e.URL is the edge
	repo := e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/tool.txt", e.Admin, "bytes").Want(201)

	session := "Bearer " + clienttest.SignInWithSSO(t, e, "bob") // begun at the edge
	bobID, _ := e.Do("GET", "/api/v1/users/me", session, nil).Want(200).Map()["id"].(string)
	e.Grant(repo, bobID, false, "read", "write")
	var tok struct{ Token string }
	e.Do("POST", "/api/v1/users/me/tokens", session, map[string]any{"name": "ci",
		"scopes": []string{"repository:read", "repository:write"}}).Want(201).JSON(&tok)
	token, creds := "Bearer "+tok.Token, basic("bob", tok.Token)
	for _, at := range []*origintest.Env{origin, e} {
		at.Do("GET", "/api/v1/users/me", session, nil).Want(200)
		at.Do("GET", "/api/v1/users/me", token, nil).Want(200)
	}
	waitUntil(t, "bob's download at the edge", func() bool {
		return e.Do("GET", "/generic/files/tool/1.0/tool.txt", creds, nil).Status == 200
	})
	e.Do("PUT", "/generic/files/tool/1.1/tool.txt", creds, "bob's").Want(201)

	origin.Do("PUT", "/api/v1/users/"+bobID, e.Admin, map[string]any{"disabled": true}).Want(200)
	// At the origin at once.
	origin.Do("GET", "/api/v1/users/me", session, nil).WantError(401, "UNAUTHORIZED")
	origin.Do("GET", "/api/v1/users/me", token, nil).WantError(401, "UNAUTHORIZED")
	origin.Do("GET", "/generic/files/tool/1.0/tool.txt", creds, nil).WantError(401, "UNAUTHORIZED")
	// At the edge once the revocation reached it.
	waitUntil(t, "bob's session and API token refused at the edge", func() bool {
		return e.Do("GET", "/api/v1/users/me", session, nil).Status == 401 &&
			e.Do("GET", "/generic/files/tool/1.0/tool.txt", creds, nil).Status == 401
	})
	e.Do("GET", "/api/v1/users/me", session, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", token, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/generic/files/tool/1.0/tool.txt", creds, nil).WantError(401, "UNAUTHORIZED")
	e.Do("PUT", "/generic/files/tool/1.2/tool.txt", creds, "bob's").WantError(401, "UNAUTHORIZED")

	// The provider still vouches for bob: the callback refuses him all
	// the same, with no tokens, and he stays disabled.
	status, body := clienttest.TrySignInWithSSO(t, e, "bob")
	refused := &origintest.Response{T: t, Status: status, Body: body}
	refused.WantError(403, "FORBIDDEN")
	if !strings.Contains(string(body), "disabled") || strings.Contains(string(body), "access_token") {
		t.Fatalf("a disabled user's single sign-on: %d %s", status, body)
	}
	var list struct {
		Users []struct {
			ID       string
			Disabled bool
		} `json:"users"`
	}
	origin.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&list)
	for _, u := range list.Users {
		if u.ID == bobID && !u.Disabled {
			t.Fatal("bob is enabled again after a single sign-on")
		}
	}
}
