package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEdgeEndedSessions: a login session ended at the origin (logout, a
// password change in another session) stops at an online edge within
// 2 s, its access token and the registry tokens the edge issued from it
// alike. The edge used to keep an origin's "valid" for the token's whole
// life (15 min), and its registry tokens skipped the session check.
func TestEdgeEndedSessions(t *testing.T) {
	es := startEdgeSite(t, "ctr", "docker")
	o, e := es.o, es.e
	status := func(auth string) int {
		req, _ := http.NewRequest("GET", e.url+"/v2/ctr/app/tags/list", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	registryToken := func(session string) string {
		var tok struct{ Token string }
		if err := json.Unmarshal(call(t, "GET", e.url+"/v2/token?scope=repository:ctr/app:pull&service=x", session, nil, 200), &tok); err != nil || tok.Token == "" {
			t.Fatalf("a registry token at the edge: %v", err)
		}
		return tok.Token
	}
	// Signed in: the image is unknown (404), not the caller (401).
	// (login answers "Bearer <access token>".)
	s1 := login(t, o.url, "admin", "changed-pw-456")
	r1 := registryToken(s1)
	for _, auth := range []string{s1, "Bearer " + r1} {
		if got := status(auth); got != 404 {
			t.Fatalf("a live session at the edge: %d", got)
		}
	}
	call(t, "POST", o.url+"/api/v1/auth/logout", s1, nil, 204)
	start := time.Now()
	waitFor(t, 2*time.Second, "the edge to refuse the ended session and its registry token", func() bool {
		return status(s1) == 401 && status("Bearer "+r1) == 401
	})
	t.Logf("logout reached the edge in %v", time.Since(start))

	// A password change in another session ends this one.
	s2, s3 := login(t, o.url, "admin", "changed-pw-456"), login(t, o.url, "admin", "changed-pw-456")
	r2 := registryToken(s2)
	if got := status(s2); got != 404 {
		t.Fatalf("a live session at the edge: %d", got)
	}
	call(t, "PUT", o.url+"/api/v1/users/me", s3, strings.NewReader(`{"current_password":"changed-pw-456","password":"changed-again-789"}`), 200)
	call(t, "GET", o.url+"/api/v1/users/me", s2, nil, 401)
	waitFor(t, 2*time.Second, "the edge to refuse the session the password change ended", func() bool {
		return status(s2) == 401 && status("Bearer "+r2) == 401
	})
}
