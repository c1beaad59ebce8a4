package clienttest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth/oidc/oidctest"
)

// StartWithSSO runs a real OpenID provider and an origin whose users
// sign in with it (its accounts: alice, bob; see oidctest).
func StartWithSSO(t *testing.T) *origintest.Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://" + ln.Addr().String() + "/api/v1/auth/oidc/callback"
	issuer := oidctest.Start(t, callback)
	return origintest.Start(t, origintest.Options{Listener: ln, Config: func(c *origin.Config) {
		c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.ClientSecret = issuer, oidctest.ClientID, oidctest.ClientSecret
		c.OIDC.RedirectURI, c.OIDC.Scopes = callback, "openid,email,profile,groups"
	}})
}

// StartWithSSOThroughEdge is StartWithSSO with an edge in front of the
// origin (ThroughEdge) that browsers reach under another host name than
// the origin's: e.URL is http://localhost:<the edge's port>, the origin
// 127.0.0.1, so a cookie set through the edge never goes to the origin
// (as with an edge and a balancer on their own names). The provider has
// both callbacks registered, and so has the origin.
func StartWithSSOThroughEdge(t *testing.T) *origintest.Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	edge := FreeAddr(t)
	_, port, _ := net.SplitHostPort(edge)
	atEdge := "http://localhost:" + port
	callbacks := []string{"http://" + ln.Addr().String() + "/api/v1/auth/oidc/callback", atEdge + "/api/v1/auth/oidc/callback"}
	issuer := oidctest.Start(t, callbacks...)
	e := origintest.Start(t, origintest.Options{Listener: ln, Config: func(c *origin.Config) {
		c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.ClientSecret = issuer, oidctest.ClientID, oidctest.ClientSecret
		c.OIDC.RedirectURI, c.OIDC.Scopes = strings.Join(callbacks, ","), "openid,email,profile,groups"
	}})
	ThroughEdgeAt(t, e, edge)
	e.URL = atEdge
	return e
}

// SignInWithSSO signs login in with the provider as a browser would,
// starting at e.URL, and returns the session's access token.
func SignInWithSSO(t *testing.T, e *origintest.Env, login string) string {
	t.Helper()
	status, body := TrySignInWithSSO(t, e, login)
	var pair struct {
		AccessToken string `json:"access_token"`
	}
	if status != 200 || json.Unmarshal(body, &pair) != nil || pair.AccessToken == "" {
		t.Fatalf("single sign-on of %s: %d %s", login, status, body)
	}
	return pair.AccessToken
}

// TrySignInWithSSO goes through the sign-in as SignInWithSSO does and
// returns the callback's answer, whatever it is.
func TrySignInWithSSO(t *testing.T, e *origintest.Env, login string) (status int, body []byte) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(e.URL + "/api/v1/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	end := oidctest.LogIn(t, c, resp, login)
	defer end.Body.Close()
	body, _ = io.ReadAll(end.Body)
	return end.StatusCode, body
}
