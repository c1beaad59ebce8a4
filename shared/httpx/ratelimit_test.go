package httpx

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := NewLimiter(3, time.Minute, func() time.Time { return now })
	for i := 0; i < 3; i++ {
		d := l.Allow("a")
		if !d.Allowed || d.Remaining != 2-i || d.Limit != 3 || !d.Reset.Equal(time.Unix(1_000_060, 0)) {
			t.Fatalf("call %d: %+v", i, d)
		}
	}
	if d := l.Allow("a"); d.Allowed || d.Remaining != 0 {
		t.Fatalf("4th call allowed: %+v", d)
	}
	if d := l.Allow("b"); !d.Allowed {
		t.Fatal("other key limited")
	}
	now = now.Add(time.Minute)
	if d := l.Allow("a"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("new window: %+v", d)
	}
	if len(l.windows) != 1 {
		t.Fatalf("finished windows not swept: %d left", len(l.windows))
	}
	if d := NewLimiter(0, time.Minute, nil).Allow("x"); !d.Allowed {
		t.Fatal("limit 0 must allow all")
	}
}

func TestBaseURL(t *testing.T) {
	r := newReq("http://internal:8080/x")
	if got := BaseURL(r, ""); got != "http://internal:8080" {
		t.Fatal(got)
	}
	r.Header.Set("X-Forwarded-Proto", "https")
	r.Header.Set("X-Forwarded-Host", "depot.example.com")
	if got := BaseURL(r, ""); got != "https://depot.example.com" {
		t.Fatal(got)
	}
	r.Header.Set("X-Forwarded-Host", "evil.com/path")
	if got := BaseURL(r, ""); got != "https://internal:8080" {
		t.Fatalf("malformed forwarded host used: %s", got)
	}
	if got := BaseURL(r, "https://pkgs.example.com/"); got != "https://pkgs.example.com" {
		t.Fatal(got)
	}
}
