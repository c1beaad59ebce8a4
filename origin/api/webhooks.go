package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Events a webhook may subscribe to ("*" is all of them).
var webhookEvents = meta.EventNames

var severities = []string{"critical", "high", "medium", "low"}

// webhookView is a webhook as the API shows it: the secret only in the
// answer to its creation (write-only after), whether one is set always.
type webhookView struct {
	ID          string              `json:"id"`
	URL         string              `json:"url"`
	Events      []string            `json:"events"`
	Description string              `json:"description"`
	Secret      string              `json:"secret,omitempty"`
	HasSecret   bool                `json:"has_secret"`
	Active      bool                `json:"active"`
	Filters     meta.WebhookFilters `json:"filters"`
	CreatedAt   time.Time           `json:"created_at"`
	UpdatedAt   time.Time           `json:"updated_at"`
	Stats       *webhookStats       `json:"stats,omitempty"`
}

type webhookStats struct {
	Total              int        `json:"total_deliveries"`
	Successful         int        `json:"successful_deliveries"`
	Failed             int        `json:"failed_deliveries"`
	LastDeliveryAt     *time.Time `json:"last_delivery_at,omitempty"`
	LastDeliveryStatus *int       `json:"last_delivery_status,omitempty"`
}

func viewWebhook(h *meta.Webhook) webhookView {
	return webhookView{ID: h.ID, URL: h.URL, Events: h.Events, Description: h.Description, HasSecret: h.Secret != "",
		Active: h.Active, Filters: h.Filters, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt}
}

// webhookRequest is the body of a create (every field) or an update
// (those given).
type webhookRequest struct {
	URL         *string              `json:"url"`
	Events      []string             `json:"events"`
	Description *string              `json:"description"`
	Secret      *string              `json:"secret"`
	Active      *bool                `json:"active"`
	Filters     *meta.WebhookFilters `json:"filters"`
}

// check validates the fields given.
func (s *Server) checkWebhook(tx *meta.Tx, req *webhookRequest) error {
	if req.URL != nil {
		u, err := url.Parse(*req.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || len(*req.URL) > 2048:
			return apierr.Invalid("url", "url must be an absolute http(s) URL without credentials, at most 2048 characters")
		case s.cfg.RequireHTTPS && u.Scheme != "https":
			return apierr.Invalid("url", "url must use https (REQUIRE_HTTPS is set)")
		}
	}
	if req.Events != nil {
		if len(req.Events) == 0 || len(req.Events) > len(webhookEvents) {
			return apierr.Invalid("events", "events must list 1 to %d event names, or [\"*\"]", len(webhookEvents))
		}
		for _, e := range req.Events {
			if e != "*" && !slices.Contains(webhookEvents, e) {
				return apierr.Invalid("events", "unknown event %q", e).With("event", e)
			}
		}
	}
	if req.Description != nil && len(*req.Description) > 1024 {
		return apierr.Invalid("description", "description is longer than 1024 characters")
	}
	if req.Secret != nil && len(*req.Secret) > 256 {
		return apierr.Invalid("secret", "secret is longer than 256 characters")
	}
	if f := req.Filters; f != nil {
		if f.RepositoryID != "" {
			if _, err := tx.Repo(f.RepositoryID); err != nil {
				return apierr.Invalid("filters", "filters.repository_id: no repository %s", f.RepositoryID)
			}
		}
		if f.UserID != "" {
			if _, err := tx.User(f.UserID); err != nil {
				return apierr.Invalid("filters", "filters.user_id: no user %s", f.UserID)
			}
		}
		if f.Format != "" && s.d.Formats[f.Format] == nil {
			return apierr.Invalid("filters", "filters.format: %q is not a format served here", f.Format)
		}
		for _, sev := range f.Severity {
			if !slices.Contains(severities, sev) {
				return apierr.Invalid("filters", "filters.severity: %q is not one of critical, high, medium, low", sev)
			}
		}
	}
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var hooks []meta.Webhook
	if err := s.view(func(tx *meta.Tx) error { var err error; hooks, err = tx.Webhooks(); return err }); err != nil {
		return err
	}
	out := []webhookView{}
	for i := range hooks {
		out = append(out, viewWebhook(&hooks[i]))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"webhooks": out, "total": len(out)})
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.URL == nil || req.Events == nil {
		return apierr.Invalid("url", "url and events are required")
	}
	if err := s.view(func(tx *meta.Tx) error { return s.checkWebhook(tx, &req) }); err != nil {
		return err
	}
	now := s.d.Now().UTC()
	h := meta.Webhook{ID: s.d.NewID(), URL: *req.URL, Events: req.Events, Active: true, CreatedAt: now, UpdatedAt: now}
	if req.Description != nil {
		h.Description = *req.Description
	}
	if req.Secret != nil {
		h.Secret = *req.Secret
	}
	if req.Active != nil {
		h.Active = *req.Active
	}
	if req.Filters != nil {
		h.Filters = *req.Filters
	}
	if err := s.apply(r.Context(), w, &meta.WebhookCreate{Webhook: h}); err != nil {
		return err
	}
	v := viewWebhook(&h)
	v.Secret = h.Secret // shown this once
	return writeJSON(w, http.StatusCreated, v)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var h *meta.Webhook
	if err := s.view(func(tx *meta.Tx) error { var err error; h, err = tx.Webhook(r.PathValue("id")); return err }); err != nil {
		return err
	}
	v := viewWebhook(h)
	st := h.Stats
	v.Stats = &webhookStats{Total: st.Total, Successful: st.Successful, Failed: st.Failed, LastDeliveryAt: st.LastAt}
	if st.LastAt != nil {
		v.Stats.LastDeliveryStatus = &st.LastStatus
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	err := s.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(id); err != nil {
			return err
		}
		return s.checkWebhook(tx, &req)
	})
	if err != nil {
		return err
	}
	cmd := &meta.WebhookUpdate{ID: id, URL: req.URL, Events: req.Events, Description: req.Description, Secret: req.Secret,
		Active: req.Active, Filters: req.Filters, At: s.d.Now().UTC()}
	if err := s.apply(r.Context(), w, cmd); err != nil {
		return err
	}
	var h *meta.Webhook
	if err := s.view(func(tx *meta.Tx) error { var err error; h, err = tx.Webhook(id); return err }); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewWebhook(h))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	return s.applyNoContent(r.Context(), w, &meta.WebhookDelete{ID: r.PathValue("id")})
}

// deliveryView is a delivery as the API shows it: the spec's fields, and
// its state, webhook, creation time and last error; the body it sends
// only when one delivery is asked for.
type deliveryView struct {
	ID          string          `json:"id"`
	WebhookID   string          `json:"webhook_id"`
	Event       string          `json:"event"`
	State       string          `json:"state"`
	StatusCode  int             `json:"status_code"`
	DeliveredAt *time.Time      `json:"delivered_at"`
	DurationMS  int64           `json:"duration_ms"`
	Attempts    int             `json:"attempts"`
	NextRetryAt *time.Time      `json:"next_retry_at,omitempty"`
	Error       string          `json:"error,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	Body        json.RawMessage `json:"request_body,omitempty"`
}

func viewDelivery(d *meta.Delivery) deliveryView {
	v := deliveryView{ID: d.ID, WebhookID: d.WebhookID, Event: d.Event, State: d.State, StatusCode: d.StatusCode,
		DeliveredAt: d.DeliveredAt, DurationMS: d.DurationMS, Attempts: d.Attempts, Error: d.Error, CreatedAt: d.CreatedAt}
	if d.RetryPending() {
		next := d.NextAttemptAt
		v.NextRetryAt = &next
	}
	return v
}

// testWebhook sends webhook.test to the webhook (even an inactive one)
// and answers the delivery once its attempt is made: 200 with its
// outcome, or 202 while it is still waiting (the loop is busy, or the
// webhook is over its rate).
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	id := r.PathValue("id")
	if err := s.webhooksOn(); err != nil {
		return err
	}
	var h *meta.Webhook
	if err := s.view(func(tx *meta.Tx) error { var err error; h, err = tx.Webhook(id); return err }); err != nil {
		return err
	}
	now := s.d.Now().UTC()
	data, _ := json.Marshal(map[string]string{"webhook_id": h.ID, "message": "This is a test delivery from Depot."})
	e := meta.Event{Name: meta.EventWebhookTest, Timestamp: now, Data: data}
	d := meta.Delivery{ID: s.d.NewID(), WebhookID: h.ID, Event: e.Name, Body: e.Envelope(), CreatedAt: now, NextAttemptAt: now, Manual: true}
	if err := s.apply(r.Context(), w, &meta.DeliveryCreate{Delivery: d}); err != nil {
		return err
	}
	return s.answerAttempt(w, r, d.ID, 0)
}

// redeliver makes one more attempt of a delivery, whatever its state,
// and answers like testWebhook.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	d, err := s.delivery(r)
	if err != nil {
		return err
	}
	if err := s.apply(r.Context(), w, &meta.DeliveryRedeliver{ID: d.ID, At: s.d.Now().UTC()}); err != nil {
		return err
	}
	return s.answerAttempt(w, r, d.ID, d.Attempts)
}

func (s *Server) webhooksOn() error {
	if s.d.Webhooks != nil && !s.d.Webhooks.Config().Enabled {
		return apierr.New(apierr.Conflict, "webhook deliveries are disabled on this server (WEBHOOKS_ENABLED=false)")
	}
	return nil
}

// answerAttempt waits (up to the delivery timeout and a little more) for
// the attempt after the first `after` and answers the delivery.
func (s *Server) answerAttempt(w http.ResponseWriter, r *http.Request, id string, after int) error {
	wait := 35 * time.Second
	if s.d.Webhooks != nil {
		wait = s.d.Webhooks.Config().Timeout + 5*time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	for {
		applied := s.d.Store.LastApplied()
		var d *meta.Delivery
		if err := s.view(func(tx *meta.Tx) error { var err error; d, err = tx.Delivery(id); return err }); err != nil {
			return err
		}
		if d.Attempts > after {
			return writeJSON(w, http.StatusOK, viewDelivery(d))
		}
		if s.d.Store.WaitIndex(ctx, applied+1) != nil {
			return writeJSON(w, http.StatusAccepted, viewDelivery(d))
		}
	}
}

// delivery reads the delivery the path names, which must be the webhook's.
func (s *Server) delivery(r *http.Request) (*meta.Delivery, error) {
	var d *meta.Delivery
	err := s.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(r.PathValue("id")); err != nil {
			return err
		}
		var err error
		d, err = tx.Delivery(r.PathValue("delivery"))
		return err
	})
	if err == nil && d.WebhookID != r.PathValue("id") {
		return nil, apierr.New(apierr.NotFound, "delivery %s is not one of webhook %s", d.ID, r.PathValue("id"))
	}
	return d, err
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	d, err := s.delivery(r)
	if err != nil {
		return err
	}
	v := viewDelivery(d)
	v.Body = d.Body
	return writeJSON(w, http.StatusOK, v)
}

// listDeliveries pages through a webhook's deliveries, newest first.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	pg, lim, err := page(r)
	if err != nil {
		return err
	}
	var list []meta.Delivery
	var total int
	err = s.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(r.PathValue("id")); err != nil {
			return err
		}
		list, total, err = tx.DeliveriesOf(r.PathValue("id"), (pg-1)*lim, lim)
		return err
	})
	if err != nil {
		return err
	}
	out := make([]deliveryView, 0, len(list))
	for i := range list {
		out = append(out, viewDelivery(&list[i]))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"deliveries": out, "total": total, "page": pg, "limit": lim})
}
