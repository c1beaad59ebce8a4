package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

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

func (req webhookRequest) input() app.WebhookInput {
	return app.WebhookInput{URL: req.URL, Events: req.Events, Description: req.Description, Secret: req.Secret, Active: req.Active, Filters: req.Filters}
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	hooks, err := s.app.ListWebhooks(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]webhookView, len(hooks))
	for i := range hooks {
		out[i] = viewWebhook(&hooks[i])
	}
	return writeJSON(w, http.StatusOK, webhookList{Webhooks: out, Total: len(out)})
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	h, idx, err := s.app.CreateWebhook(r.Context(), p, req.input())
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	v := viewWebhook(h)
	v.Secret = h.Secret // shown this once
	return written(w, idx, nil, http.StatusCreated, v)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	h, err := s.app.GetWebhook(r.Context(), p, r.PathValue("id"))
	if err != nil {
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

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req webhookRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	h, idx, err := s.app.UpdateWebhook(r.Context(), p, r.PathValue("id"), req.input())
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, viewWebhook(h))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteWebhook(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
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
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	id, idx, err := s.app.TestWebhook(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	format.SetIndex(w.Header(), idx)
	return s.answerAttempt(w, r, id, 0)
}

// redeliver makes one more attempt of a delivery, whatever its state,
// and answers like testWebhook.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	after, idx, err := s.app.Redeliver(r.Context(), p, r.PathValue("id"), r.PathValue("delivery"))
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	format.SetIndex(w.Header(), idx)
	return s.answerAttempt(w, r, r.PathValue("delivery"), after)
}

// answerAttempt waits for the attempt after the first `after` and answers
// the delivery.
func (s *Server) answerAttempt(w http.ResponseWriter, r *http.Request, id string, after int) error {
	d, made, err := s.app.AwaitAttempt(r.Context(), id, after)
	if err != nil {
		return err
	}
	if !made {
		return writeJSON(w, http.StatusAccepted, viewDelivery(d))
	}
	return writeJSON(w, http.StatusOK, viewDelivery(d))
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	d, err := s.app.Delivery(r.Context(), p, r.PathValue("id"), r.PathValue("delivery"))
	if err != nil {
		return err
	}
	v := viewDelivery(d)
	v.Body = d.Body
	return writeJSON(w, http.StatusOK, v)
}

// listDeliveries pages through a webhook's deliveries, newest first.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, err := pageOf(r)
	if err != nil {
		return err
	}
	l, err := s.app.ListDeliveries(r.Context(), p, r.PathValue("id"), pg)
	if err != nil {
		return err
	}
	out := make([]deliveryView, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, viewDelivery(&l.Items[i]))
	}
	return writeJSON(w, http.StatusOK, deliveryList{Deliveries: out, Total: l.Total, Page: pg.Number, Limit: pg.Limit})
}
