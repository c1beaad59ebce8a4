package origin_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestMinIndex: a read answers the index it was served at; one that asks
// for an index this origin has applied is answered; one that asks for an
// index it has not reached waits, then says 503 with Retry-After; a
// malformed one is a 400.
func TestMinIndex(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	r := e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "files", "format": "generic"}).Want(201)
	written, err := strconv.ParseUint(r.Header.Get("X-Depot-Index"), 10, 64)
	if err != nil {
		t.Fatalf("a write answered X-Depot-Index %q", r.Header.Get("X-Depot-Index"))
	}
	got := e.DoHeader("GET", "/api/v1/repositories", e.Admin, nil, map[string]string{"X-Depot-Min-Index": strconv.FormatUint(written, 10)}).Want(200)
	if at, _ := strconv.ParseUint(got.Header.Get("X-Depot-Index"), 10, 64); at < written {
		t.Fatalf("a read after index %d answered at %q", written, got.Header.Get("X-Depot-Index"))
	}
	start := time.Now()
	late := e.DoHeader("GET", "/api/v1/repositories", e.Admin, nil, map[string]string{"X-Depot-Min-Index": strconv.FormatUint(written+1000, 10)})
	late.WantError(503, "UNAVAILABLE")
	if late.Header.Get("Retry-After") == "" || time.Since(start) < time.Second {
		t.Fatalf("an index not reached: Retry-After %q after %v", late.Header.Get("Retry-After"), time.Since(start))
	}
	e.DoHeader("GET", "/api/v1/repositories", e.Admin, nil, map[string]string{"X-Depot-Min-Index": "soon"}).WantError(400, "VALIDATION_FAILED")
}

// TestUncleanAPIPaths: the API's prefix alone, or an API path with an
// empty or dot segment, is answered in the API's JSON (404 saying where
// to go), not with the HTML redirect of path cleaning.
func TestUncleanAPIPaths(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	for p, want := range map[string]string{
		"/api/v1":            "the endpoints are under /api/v1/",
		"/api/v1//health":    "did you mean /api/v1/health?",
		"/api/v1/./health":   "did you mean /api/v1/health?",
		"/api/v1/users/../x": "did you mean /api/v1/x?",
	} {
		r := e.Do("GET", p, e.Admin, nil).WantError(404, "NOT_FOUND")
		if !strings.Contains(string(r.Body), want) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %s %s", p, r.Header.Get("Content-Type"), r.Body)
		}
	}
	e.Do("GET", "/api/v1/health", "", nil).Want(200)
}
