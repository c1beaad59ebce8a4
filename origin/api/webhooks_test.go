package api_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

type webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Secret      string   `json:"secret"`
	HasSecret   bool     `json:"has_secret"`
	Active      bool     `json:"active"`
	Filters     struct {
		RepositoryID string   `json:"repository_id"`
		Format       string   `json:"format"`
		Severity     []string `json:"severity"`
	} `json:"filters"`
	Stats *struct {
		Total int `json:"total_deliveries"`
	} `json:"stats"`
}

// TestWebhookCRUD: an administrator creates a webhook (the secret is
// answered this once, never again), lists it, reads it with its stats,
// switches it off and narrows it with a partial PUT, and deletes it.
// Bad fields are refused naming the field; other users may not manage
// webhooks; with REQUIRE_HTTPS an http URL is refused.
func TestWebhookCRUD(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("libs", "generic", false)
	var h webhook
	e.Do("POST", "/api/v1/webhooks", e.Admin, map[string]any{"url": "https://ci.example.com/hook", "events": []string{"artifact.uploaded", "artifact.deleted"},
		"secret": "s3cret", "description": "CI", "filters": map[string]any{"repository_id": repoID}}).Want(201).JSON(&h)
	if h.ID == "" || h.Secret != "s3cret" || !h.Active || !h.HasSecret || h.Filters.RepositoryID != repoID {
		t.Fatalf("created %+v", h)
	}
	list := e.Do("GET", "/api/v1/webhooks", e.Admin, nil).Want(200)
	if strings.Contains(string(list.Body), "s3cret") || !strings.Contains(string(list.Body), h.ID) {
		t.Fatalf("list: %s", list.Body)
	}
	var got webhook
	r := e.Do("GET", "/api/v1/webhooks/"+h.ID, e.Admin, nil).Want(200)
	r.JSON(&got)
	if strings.Contains(string(r.Body), "s3cret") || got.Stats == nil || got.Stats.Total != 0 || !got.HasSecret {
		t.Fatalf("detail: %s", r.Body)
	}
	e.Do("PUT", "/api/v1/webhooks/"+h.ID, e.Admin, map[string]any{"active": false, "filters": map[string]any{"format": "generic", "severity": []string{"critical"}}}).
		Want(200).JSON(&got)
	if got.Active || got.Filters.Format != "generic" || got.URL != h.URL || len(got.Events) != 2 || got.Description != "CI" {
		t.Fatalf("after a partial update: %+v", got)
	}

	for _, bad := range []map[string]any{
		{"url": "ftp://x/y", "events": []string{"*"}},
		{"url": "https://user:pw@x/y", "events": []string{"*"}},
		{"url": "https://x/y", "events": []string{"artifact.exploded"}},
		{"url": "https://x/y", "events": []string{}},
		{"url": "https://x/y", "events": []string{"*"}, "filters": map[string]any{"repository_id": "nope"}},
		{"url": "https://x/y", "events": []string{"*"}, "filters": map[string]any{"severity": []string{"dire"}}},
		{"events": []string{"*"}},
	} {
		if r := e.Do("POST", "/api/v1/webhooks", e.Admin, bad); r.Status != 400 || !strings.Contains(string(r.Body), "VALIDATION_FAILED") {
			t.Errorf("creating %v: %d %s", bad, r.Status, r.Body)
		}
	}
	u := newUser(e, "bob", "user")
	e.Do("GET", "/api/v1/webhooks", u.token, nil).Want(403)
	e.Do("POST", "/api/v1/webhooks", u.token, map[string]any{"url": "https://x/y", "events": []string{"*"}}).Want(403)

	// An internal address, given or resolved (localhost), is refused
	// at once, naming the setting that allows it.
	for _, hook := range []string{"http://127.0.0.1:9000/hook", "http://10.1.2.3/hook", "http://[::1]/hook", "http://localhost:9000/hook"} {
		r := e.Do("POST", "/api/v1/webhooks", e.Admin, map[string]any{"url": hook, "events": []string{"*"}})
		if r.Status != 400 || !strings.Contains(string(r.Body), "--webhook-allow-private-networks") {
			t.Errorf("creating a webhook to %s: %d %s", hook, r.Status, r.Body)
		}
	}
	if r := e.Do("PUT", "/api/v1/webhooks/"+h.ID, e.Admin, map[string]any{"url": "http://192.168.1.20/hook"}); r.Status != 400 ||
		!strings.Contains(string(r.Body), "WEBHOOK_ALLOW_PRIVATE_NETWORKS") {
		t.Errorf("changing a webhook to a private address: %d %s", r.Status, r.Body)
	}

	e.Do("DELETE", "/api/v1/webhooks/"+h.ID, e.Admin, nil).Want(204)
	e.Do("GET", "/api/v1/webhooks/"+h.ID, e.Admin, nil).Want(404)
	e.Do("DELETE", "/api/v1/webhooks/"+h.ID, e.Admin, nil).Want(404)

	strict := origintest.Start(t, origintest.Options{TLS: true, Config: func(c *origin.Config) { c.RequireHTTPS = true }})
	if r := strict.Do("POST", "/api/v1/webhooks", strict.Admin, map[string]any{"url": "http://ci.example.com/hook", "events": []string{"*"}}); r.Status != 400 ||
		!strings.Contains(string(r.Body), "https") {
		t.Fatalf("an http URL with REQUIRE_HTTPS: %d %s", r.Status, r.Body)
	}
}
