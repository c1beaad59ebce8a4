package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

func events(t *testing.T, s *Store, after string) []LoggedEvent {
	t.Helper()
	var out []LoggedEvent
	if err := s.View(func(tx *Tx) error { var err error; out, err = tx.Events(after, 0); return err }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEventsRecordedByCommands(t *testing.T) {
	s := open(t)
	alice := &Actor{UserID: "u1", Username: "alice"}
	apply := func(c Command) error { return s.Apply(0, c) }
	must := func(c Command) {
		t.Helper()
		if err := apply(c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	must(&UserCreate{User: User{ID: "u1", Username: "alice", Role: RoleUser, CreatedAt: t0}})
	must(&RepoCreate{Repo: Repository{ID: "r1", Name: "files", Format: "generic", CreatedAt: t0}, Actor: alice})
	must(&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "tool/1.0/t", PackageName: "tool", Version: "1.0",
		SizeBytes: 10, Digest: "sha256:aa", Checksums: blob.Checksums{SHA256: "aa"}, UploadedAt: t0, UploadedBy: "alice", UploaderID: "u1"}})
	// A refused command records nothing.
	if err := apply(&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "tool/1.0/t", Digest: "sha256:bb", UploadedAt: t0}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate path: %v", err)
	}
	// A tag move: the new artifact is announced, the bookkeeping is not.
	must(&ArtifactsApply{RepoID: "r1", Drop: []string{"a1"}, Put: []Artifact{
		{ID: "a3", RepositoryID: "r1", Path: "tool/2.0/t", PackageName: "tool", Version: "2.0", Digest: "sha256:cc", UploadedAt: t0, UploadedBy: "alice"},
		{ID: "a4", RepositoryID: "r1", Path: "tool/2.0/t.mod", PackageName: "tool", Version: "2.0", Digest: "sha256:dd", UploadedAt: t0}},
		Quiet: []string{"a1", "a4"}, Actor: alice, At: t0})
	must(&ArtifactDelete{ID: "a3", RepoID: "r1", Actor: alice, At: t0.Add(time.Minute)})
	must(&RepoDelete{ID: "r1", Actor: alice, At: t0.Add(time.Hour)})

	got := events(t, s, "")
	want := []struct{ name, data string }{
		{EventUserCreated, `{"user_id":"u1","username":"alice","role":"user","created_by":{"user_id":"","username":"system"}}`},
		{EventRepoCreated, `{"repository_id":"r1","repository_name":"files","format":"generic","created_by":{"user_id":"u1","username":"alice"}}`},
		{EventArtifactUploaded, `{"artifact_id":"a1","repository_id":"r1","repository_name":"files","package_name":"tool","version":"1.0","format":"generic","size_bytes":10,"checksum_sha256":"aa","uploader":{"user_id":"u1","username":"alice"}}`},
		{EventArtifactUploaded, `{"artifact_id":"a3","repository_id":"r1","repository_name":"files","package_name":"tool","version":"2.0","format":"generic","size_bytes":0,"checksum_sha256":"","uploader":{"user_id":"","username":"alice"}}`},
		{EventArtifactDeleted, `{"artifact_id":"a3","repository_name":"files","package_name":"tool","version":"2.0","deleted_by":{"user_id":"u1","username":"alice"}}`},
		{EventRepoDeleted, `{"repository_id":"r1","repository_name":"files","format":"generic","deleted_by":{"user_id":"u1","username":"alice"}}`},
	}
	if len(got) != len(want) {
		for _, e := range got {
			t.Logf("%s %s %s", e.Cursor, e.Name, e.Data)
		}
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || string(got[i].Data) != w.data {
			t.Errorf("event %d = %s %s\nwant %s %s", i, got[i].Name, got[i].Data, w.name, w.data)
		}
		if i > 0 && got[i].Cursor <= got[i-1].Cursor {
			t.Errorf("cursors out of order: %s after %s", got[i].Cursor, got[i-1].Cursor)
		}
	}
	if got[2].RepositoryID != "r1" || got[2].Format != "generic" || got[2].UserID != "u1" {
		t.Errorf("filter attributes of the upload: %+v", got[2])
	}
	// Reading after a cursor goes on from there.
	if rest := events(t, s, got[3].Cursor); len(rest) != 2 || rest[0].Cursor != got[4].Cursor {
		t.Errorf("after %s: %d events", got[3].Cursor, len(rest))
	}
	// The envelope is what a receiver gets.
	var env map[string]any
	if err := json.Unmarshal(got[2].Envelope(), &env); err != nil || env["event"] != EventArtifactUploaded || env["timestamp"] != "2026-01-02T03:04:05Z" {
		t.Errorf("envelope %s: %v", got[2].Envelope(), err)
	}
	// Only downloads come in batches; nothing else can be invented.
	bad := Event{Name: EventArtifactUploaded, Timestamp: t0, Data: json.RawMessage(`{}`)}
	if err := apply(&EventsRecord{Events: []Event{bad}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an upload event recorded directly: %v", err)
	}
	// Compaction forgets the oldest.
	must(&EventsCompact{EventsBefore: got[4].Cursor, At: t0})
	if rest := events(t, s, ""); len(rest) != 2 {
		t.Errorf("after compaction: %d events, want 2", len(rest))
	}
	_ = s.View(func(tx *Tx) error {
		if got3 := tx.EventsTrimmed(); got3 != got[3].Cursor {
			t.Errorf("trimmed up to %q, want the last forgotten %q", got3, got[3].Cursor)
		}
		return nil
	})
}

func TestDeliveryQueue(t *testing.T) {
	s := open(t)
	must := func(c Command) {
		t.Helper()
		if err := s.Apply(0, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	must(&WebhookCreate{Webhook: Webhook{ID: "w1", URL: "https://x/", Events: []string{"*"}, Active: true, CreatedAt: t0}})
	var h *Webhook
	_ = s.View(func(tx *Tx) error { h, _ = tx.Webhook("w1"); return nil })
	if h.Cursor != 1 {
		t.Fatalf("cursor of a new webhook = %d, want its index 1", h.Cursor)
	}
	body := json.RawMessage(`{}`)
	d := func(id string, created time.Time) Delivery {
		return Delivery{ID: id, WebhookID: "w1", Event: EventArtifactUploaded, Body: body, CreatedAt: created, NextAttemptAt: created}
	}
	// The leader read the cursor at 1: an enqueue from elsewhere is refused.
	if err := s.Apply(0, &DeliveriesEnqueue{WebhookID: "w1", From: 0, To: 2}); !errors.Is(err, ErrConflict) {
		t.Fatalf("enqueue from a stale cursor: %v", err)
	}
	must(&DeliveriesEnqueue{WebhookID: "w1", From: 1, To: 3, Deliveries: []Delivery{d("d1", t0), d("d2", t0.Add(time.Second)), d("d3", t0.Add(2*time.Second))}})
	due := func(at time.Time) (ids []string) {
		_ = s.View(func(tx *Tx) error {
			ds, err := tx.DueDeliveries(at, 10)
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
			return err
		})
		return ids
	}
	if got := due(t0.Add(time.Second)); len(got) != 2 || got[0] != "d1" {
		t.Errorf("due at t0+1s: %v", got)
	}
	retry := t0.Add(time.Minute)
	must(&DeliveryAttempt{ID: "d1", Attempt: 1, At: t0, StatusCode: 500, Retry: &retry})
	must(&DeliveryAttempt{ID: "d2", Attempt: 1, At: t0, StatusCode: 200, Succeeded: true})
	// The same attempt's outcome twice (a leader that lost its answer) is refused.
	if err := s.Apply(0, &DeliveryAttempt{ID: "d2", Attempt: 1, At: t0, StatusCode: 200, Succeeded: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("a second outcome of attempt 1: %v", err)
	}
	if got := due(t0.Add(30 * time.Second)); len(got) != 1 || got[0] != "d3" {
		t.Errorf("due at t0+30s: %v (d1 waits for its retry)", got)
	}
	if got := due(retry); len(got) != 2 {
		t.Errorf("due at the retry: %v", got)
	}
	must(&DeliveryAttempt{ID: "d1", Attempt: 2, At: retry, StatusCode: 0, Error: "timeout"}) // given up
	_ = s.View(func(tx *Tx) error {
		list, total, err := tx.DeliveriesOf("w1", 0, 2)
		if err != nil || total != 3 || len(list) != 2 || list[0].ID != "d3" || list[1].ID != "d2" {
			t.Errorf("newest first: %v %d %v", list, total, err)
		}
		h, _ := tx.Webhook("w1")
		if h.Stats.Total != 3 || h.Stats.Successful != 1 || h.Stats.Failed != 2 || h.Stats.LastStatus != 0 || h.Cursor != 3 {
			t.Errorf("webhook after three attempts: %+v", h)
		}
		d1, _ := tx.Delivery("d1")
		if d1.State != DeliveryFailed || d1.Attempts != 2 || d1.RetryPending() {
			t.Errorf("d1 = %+v", d1)
		}
		return nil
	})
	must(&DeliveryRedeliver{ID: "d1", At: retry})
	if got := due(retry); len(got) != 2 {
		t.Errorf("due after redelivering d1: %v", got)
	}
	// Deleting the webhook drops its deliveries, pending or not.
	must(&WebhookDelete{ID: "w1"})
	_ = s.View(func(tx *Tx) error {
		if _, err := tx.Delivery("d2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a deleted webhook's delivery: %v", err)
		}
		if n := tx.PendingDeliveries(10); n != 0 {
			t.Errorf("%d pending after the webhook went", n)
		}
		return nil
	})
}

// TestWebhookWants: an event goes to a webhook subscribed to its name
// (or to "*") when every filter that is set matches; a filter the event
// has nothing for does not.
func TestWebhookWants(t *testing.T) {
	scan := Event{Name: EventScanCompleted, RepositoryID: "r1", Format: "npm", UserID: "u1", Severity: []string{"high", "low"}}
	user := Event{Name: EventUserCreated, UserID: "u1"}
	for _, c := range []struct {
		name   string
		hook   Webhook
		e      Event
		wanted bool
	}{
		{"all", Webhook{Events: []string{"*"}}, scan, true},
		{"another event", Webhook{Events: []string{EventArtifactUploaded}}, scan, false},
		{"its event", Webhook{Events: []string{EventArtifactUploaded, EventScanCompleted}}, scan, true},
		{"repository", Webhook{Events: []string{"*"}, Filters: WebhookFilters{RepositoryID: "r1"}}, scan, true},
		{"another repository", Webhook{Events: []string{"*"}, Filters: WebhookFilters{RepositoryID: "r2"}}, scan, false},
		{"format, any case", Webhook{Events: []string{"*"}, Filters: WebhookFilters{Format: "NPM"}}, scan, true},
		{"severity found", Webhook{Events: []string{"*"}, Filters: WebhookFilters{Severity: []string{"critical", "high"}}}, scan, true},
		{"severity not found", Webhook{Events: []string{"*"}, Filters: WebhookFilters{Severity: []string{"critical"}}}, scan, false},
		{"every filter", Webhook{Events: []string{"*"}, Filters: WebhookFilters{RepositoryID: "r1", UserID: "u2"}}, scan, false},
		{"a filter the event has nothing for", Webhook{Events: []string{"*"}, Filters: WebhookFilters{RepositoryID: "r1"}}, user, false},
		{"user", Webhook{Events: []string{"*"}, Filters: WebhookFilters{UserID: "u1"}}, user, true},
	} {
		if got := c.hook.Wants(&c.e); got != c.wanted {
			t.Errorf("%s: wants %v, want %v", c.name, got, c.wanted)
		}
	}
}

// TestEventsNewestFirst: the log read backwards from the newest, page by
// page from each page's last cursor, is the log reversed.
func TestEventsNewestFirst(t *testing.T) {
	s := open(t)
	for i := range 5 {
		id := fmt.Sprint("u", i)
		if err := s.Apply(uint64(i+1), &UserCreate{User: User{ID: id, Username: id, Role: RoleUser, CreatedAt: t0}}); err != nil {
			t.Fatal(err)
		}
	}
	forward := events(t, s, "")
	var back []LoggedEvent
	for before := ""; ; {
		var page []LoggedEvent
		if err := s.View(func(tx *Tx) error { var err error; page, err = tx.EventsNewestFirst(before, 2); return err }); err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		back = append(back, page...)
		before = page[len(page)-1].Cursor
	}
	if len(forward) != 5 || len(back) != len(forward) {
		t.Fatalf("%d forward, %d backward", len(forward), len(back))
	}
	for i := range forward {
		if back[len(back)-1-i].Cursor != forward[i].Cursor {
			t.Fatalf("backward %d is %s, forward %s", i, back[len(back)-1-i].Cursor, forward[i].Cursor)
		}
	}
}
