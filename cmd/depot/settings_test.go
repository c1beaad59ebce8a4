package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSettingsFixedAtStartup: a run-time setting whose flag or variable
// the origin was started with is shown as fixed by it, keeps its startup
// value, and a change of it is refused, naming what fixes it; the others
// change.
func TestSettingsFixedAtStartup(t *testing.T) {
	s := newSite(t)
	s.flags = []string{"--webhook-max-retries", "3"}
	s.env = []string{"RATE_LIMIT_LOGIN=50"}
	o := s.start(t)
	first := login(t, o.url, "admin", "initial-pw-123")
	call(t, "PUT", o.url+"/api/v1/users/me", first, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok := login(t, o.url, "admin", "changed-pw-456")
	var got struct {
		Settings []struct {
			Key, Source string
			FixedBy     string `json:"fixed_by"`
			Value       any
		}
	}
	if err := json.Unmarshal(call(t, "GET", o.url+"/api/v1/admin/settings", tok, nil, 200), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"webhooks.max_retries": "flag --webhook-max-retries 3", "rate_limit.login": "environment RATE_LIMIT_LOGIN 50",
		"webhooks.rate_limit": "default  600"}
	for _, r := range got.Settings {
		if w, ok := want[r.Key]; ok {
			if g := strings.Join([]string{r.Source, r.FixedBy, jsonText(r.Value)}, " "); g != w {
				t.Errorf("%s: %q, want %q", r.Key, g, w)
			}
		}
	}
	body := string(call(t, "PUT", o.url+"/api/v1/admin/settings", tok, strings.NewReader(`{"webhooks.max_retries": 5}`), 409))
	if !strings.Contains(body, "--webhook-max-retries") || !strings.Contains(body, `"field":"webhooks.max_retries"`) {
		t.Errorf("a change of a setting the flag fixes: %s", body)
	}
	call(t, "PUT", o.url+"/api/v1/admin/settings", tok, strings.NewReader(`{"rate_limit.login": 20}`), 409)
	call(t, "PUT", o.url+"/api/v1/admin/settings", tok, strings.NewReader(`{"webhooks.rate_limit": 20}`), 200)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
