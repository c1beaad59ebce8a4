package meta

import (
	"slices"
	"strings"
	"time"
)

// The webhook kind and its commands. Its records hold webhooks' signing
// secrets: never in an edge's feed.
const (
	KindWebhook      Kind    = 10
	CmdWebhookCreate CmdType = 26
	CmdWebhookUpdate CmdType = 27
	CmdWebhookDelete CmdType = 28
)

func init() {
	declareKind(KindWebhook, kindDecl{Name: "webhooks", Bucket: "webhooks"})
	declareCommand(CmdWebhookCreate, func() Command { return new(WebhookCreate) })
	declareCommand(CmdWebhookUpdate, func() Command { return new(WebhookUpdate) })
	declareCommand(CmdWebhookDelete, func() Command { return new(WebhookDelete) })
}

// Webhooks: subscriptions that receive events by HTTP POST. Global
// records; a feed to an edge never carries them (they hold the secrets
// deliveries are signed with).

// Webhook is a subscription.
type Webhook struct {
	ID          string         `json:"id"`
	URL         string         `json:"url"`
	Events      []string       `json:"events"`
	Description string         `json:"description"`
	Secret      string         `json:"secret,omitempty"`
	Active      bool           `json:"active"`
	Filters     WebhookFilters `json:"filters"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	// Cursor is the log index up to which events have been considered
	// for this webhook: it starts where the webhook was created (or last
	// activated), so a webhook receives only what happens after.
	Cursor uint64       `json:"cursor"`
	Stats  WebhookStats `json:"stats"`
	// ActiveSince is when it was created active or last activated.
	ActiveSince time.Time `json:"active_since,omitempty"`
}

// WebhookFilters narrow what a webhook receives: an event is delivered
// only when every filter that is set matches.
type WebhookFilters struct {
	RepositoryID string   `json:"repository_id,omitempty"`
	Format       string   `json:"format,omitempty"`
	Severity     []string `json:"severity,omitempty"`
	UserID       string   `json:"user_id,omitempty"`
}

// WebhookCreate adds a webhook.
type WebhookCreate struct {
	Webhook Webhook `json:"webhook"`
}

// WebhookUpdate changes the fields given (nil: unchanged).
type WebhookUpdate struct {
	ID          string          `json:"id"`
	URL         *string         `json:"url,omitempty"`
	Events      []string        `json:"events,omitempty"`
	Description *string         `json:"description,omitempty"`
	Secret      *string         `json:"secret,omitempty"`
	Active      *bool           `json:"active,omitempty"`
	Filters     *WebhookFilters `json:"filters,omitempty"`
	At          time.Time       `json:"at"`
}

// WebhookDelete removes a webhook.
type WebhookDelete struct {
	ID string `json:"id"`
}

func (*WebhookCreate) Type() CmdType { return CmdWebhookCreate }
func (*WebhookUpdate) Type() CmdType { return CmdWebhookUpdate }
func (*WebhookDelete) Type() CmdType { return CmdWebhookDelete }
func (*WebhookCreate) Scope() string { return "" }
func (*WebhookUpdate) Scope() string { return "" }
func (*WebhookDelete) Scope() string { return "" }

func (c *WebhookCreate) apply(tx *Tx) error {
	h := c.Webhook
	if h.ID == "" || h.URL == "" || len(h.Events) == 0 {
		return Invalidf("webhook id, url and events required")
	}
	if tx.exists(KindWebhook, h.ID) {
		return Conflictf("webhook id %q exists", h.ID)
	}
	h.Cursor, h.Stats = tx.idx, WebhookStats{}
	if h.Active {
		h.ActiveSince = h.CreatedAt
	}
	return tx.putRec(KindWebhook, h.ID, h)
}

func (c *WebhookUpdate) apply(tx *Tx) error {
	h, err := tx.Webhook(c.ID)
	if err != nil {
		return err
	}
	if c.URL != nil {
		h.URL = *c.URL
	}
	if c.Events != nil {
		h.Events = c.Events
	}
	if c.Description != nil {
		h.Description = *c.Description
	}
	if c.Secret != nil {
		h.Secret = *c.Secret
	}
	if c.Active != nil {
		if *c.Active && !h.Active {
			h.Cursor = tx.idx // what happened while inactive is not sent
			h.ActiveSince = c.At
		}
		h.Active = *c.Active
	}
	if c.Filters != nil {
		h.Filters = *c.Filters
	}
	h.UpdatedAt = c.At
	return tx.putRec(KindWebhook, h.ID, h)
}

func (c *WebhookDelete) apply(tx *Tx) error {
	if !tx.exists(KindWebhook, c.ID) {
		return NotFoundf("webhook %s", c.ID)
	}
	if err := tx.dropDeliveries(c.ID); err != nil {
		return err
	}
	return tx.delRec(KindWebhook, c.ID)
}

// Webhook reads one webhook.
func (tx *Tx) Webhook(id string) (*Webhook, error) {
	return getRec[Webhook](tx, KindWebhook, id, "webhook")
}

// Webhooks lists every webhook, by id.
func (tx *Tx) Webhooks() ([]Webhook, error) {
	out, err := listRecs[Webhook](tx, KindWebhook, "")
	if out == nil {
		out = []Webhook{}
	}
	return out, err
}

// Wants reports whether the webhook receives e: it is subscribed to e's
// name (or to "*") and every filter that is set matches; a filter the
// event has nothing for (user.created has no repository) does not match.
func (h *Webhook) Wants(e *Event) bool {
	if !slices.Contains(h.Events, "*") && !slices.Contains(h.Events, e.Name) {
		return false
	}
	f := h.Filters
	switch {
	case f.RepositoryID != "" && f.RepositoryID != e.RepositoryID,
		f.Format != "" && !strings.EqualFold(f.Format, e.Format),
		f.UserID != "" && f.UserID != e.UserID:
		return false
	case len(f.Severity) > 0:
		return slices.ContainsFunc(e.Severity, func(s string) bool { return slices.Contains(f.Severity, s) })
	}
	return true
}
