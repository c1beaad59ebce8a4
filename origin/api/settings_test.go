package api_test

import (
	"fmt"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

type settingsAnswer struct {
	Settings []struct {
		Key, Type, Source string
		FixedBy           string `json:"fixed_by"`
		Value, Default    any
		UpdatedBy         string `json:"updated_by"`
	}
	Values map[string]any
}

// TestSettings: an administrator reads and changes the run-time
// settings, which take effect at once (a user may no longer create a
// repository; a repository made without saying is public), come back
// to their defaults with null, and are refused whole for a key or a
// value they do not take; no one else may; the change is an event.
func TestSettings(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateUser("uma", "user", "uma-password-1")
	uma := e.Login("uma", "uma-password-1")
	var got settingsAnswer
	e.Do("GET", "/api/v1/admin/settings", e.Admin, nil).Want(200).JSON(&got)
	if got.Values["repositories.users_create"] != true || got.Values["webhooks.retry_backoff"] != "exponential" || len(got.Settings) < 10 {
		t.Fatalf("defaults: %+v", got)
	}
	e.Do("GET", "/api/v1/admin/settings", uma, nil).WantError(403, "FORBIDDEN")
	e.Do("PUT", "/api/v1/admin/settings", uma, map[string]any{"repositories.default_public": true}).WantError(403, "FORBIDDEN")

	e.Do("POST", "/api/v1/repositories", uma, map[string]any{"name": "umas", "format": "generic"}).Want(201)
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"repositories.users_create": false, "repositories.default_public": true,
		"webhooks.max_retries": 2}).Want(200).JSON(&got)
	seen := 0
	for _, s := range got.Settings {
		if s.Key == "repositories.default_public" {
			seen++
			if s.Value != true || s.Source != "settings" || s.UpdatedBy != "admin" || s.Default != false || s.Type != "boolean" {
				t.Errorf("after the change: %+v", s)
			}
		}
	}
	if seen != 1 {
		t.Errorf("repositories.default_public listed %d times", seen)
	}
	e.Do("POST", "/api/v1/repositories", uma, map[string]any{"name": "umas2", "format": "generic"}).WantError(403, "FORBIDDEN")
	var repo struct{ Public bool }
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "open", "format": "generic"}).Want(201).JSON(&repo)
	if !repo.Public {
		t.Error("a repository made without saying is not public")
	}
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "closed", "format": "generic", "public": false}).Want(201).JSON(&repo)
	if repo.Public {
		t.Error("public: false was not honoured")
	}

	// Refusals, each naming the key; nothing of a refused change applies.
	for body, field := range map[string]string{
		`{"no.such": 1}`: "no.such",
		`{"webhooks.max_retries": 101, "repositories.default_public": false}`: "webhooks.max_retries",
		`{"webhooks.retry_backoff": "random"}`:                                "webhooks.retry_backoff",
		`{"repositories.users_create": "yes"}`:                                "repositories.users_create",
	} {
		e.Do("PUT", "/api/v1/admin/settings", e.Admin, body).WantError(400, "VALIDATION_FAILED").WantField(field)
	}
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{}).WantError(400, "BAD_REQUEST")
	e.Do("GET", "/api/v1/admin/settings", e.Admin, nil).Want(200).JSON(&got)
	if got.Values["repositories.default_public"] != true || got.Values["webhooks.max_retries"] != float64(2) {
		t.Errorf("a refused change applied: %v", got.Values)
	}

	// null: back to the default.
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"repositories.users_create": nil, "repositories.default_public": nil}).Want(200).JSON(&got)
	if got.Values["repositories.users_create"] != true || got.Values["repositories.default_public"] != false {
		t.Errorf("reset: %v", got.Values)
	}
	e.Do("POST", "/api/v1/repositories", uma, map[string]any{"name": "umas3", "format": "generic"}).Want(201)

	var evs struct{ Events []struct{ Event string } }
	e.Do("GET", "/api/v1/events?since=0&types=settings.updated", e.Admin, nil).Want(200).JSON(&evs)
	if len(evs.Events) != 2 {
		t.Errorf("settings.updated events: %+v", evs)
	}
}

// TestSettingsRateLimit: the API's rate limit follows its setting at the
// next request.
func TestSettingsRateLimit(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"rate_limit.api": 3, "rate_limit.window_seconds": 3600}).Want(200)
	codes := ""
	for range 5 {
		codes += fmt.Sprint(e.Do("GET", "/api/v1/repositories", "", nil).Status) + " "
	}
	if codes != "200 200 200 429 429 " {
		t.Errorf("anonymous requests under a limit of 3: %s", codes)
	}
	e.Do("PUT", "/api/v1/admin/settings", e.Admin, map[string]any{"rate_limit.api": 0}).Want(200)
	e.Do("GET", "/api/v1/repositories", "", nil).Want(200)
}
