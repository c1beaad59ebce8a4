package origin_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRequireHTTPS: with REQUIRE_HTTPS a plain-HTTP request is refused
// (403, the reason said) except a health check, whoever sends it; HTTPS
// is served, and so is a request a trusted proxy says came over HTTPS.
func TestRequireHTTPS(t *testing.T) {
	e := origintest.Start(t, origintest.Options{TLS: true, Config: func(c *origin.Config) {
		c.RequireHTTPS = true
		c.TrustedProxies = "127.0.0.1"
	}})
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200) // over HTTPS
	plain := origintest.Start(t, origintest.Options{KeepInitialPassword: true, Config: func(c *origin.Config) { c.RequireHTTPS = true }})
	r := plain.Do("GET", "/api/v1/repositories", "", nil).Want(403)
	if !strings.Contains(string(r.Body), "HTTPS") {
		t.Fatalf("refusal: %s", r.Body)
	}
	plain.Do("GET", "/generic/any/p/1/f", "", nil).Want(403)
	plain.Do("GET", "/api/v1/health", "", nil).Want(200)
	// From a trusted proxy that terminated TLS.
	proxied := origintest.Start(t, origintest.Options{KeepInitialPassword: true, Config: func(c *origin.Config) {
		c.RequireHTTPS = true
		c.TrustedProxies = "127.0.0.1"
	}})
	proxied.DoHeader("GET", "/api/v1/repositories", "", nil, map[string]string{"X-Forwarded-Proto": "https"}).Want(200)
	proxied.DoHeader("GET", "/api/v1/repositories", "", nil, map[string]string{"X-Forwarded-Proto": "http"}).Want(403)
}
