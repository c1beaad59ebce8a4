package app

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/depot-registry/depot/origin/service/webhooks"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Webhooks are managed by administrators. Deliveries are made by the
// leader's delivery loop (origin/service/webhooks); these use cases read
// and queue them.

// severities a webhook may filter scan events by.
var severities = []string{"critical", "high", "medium", "low"}

// WebhookInput is a webhook's fields: all of URL and Events to create one,
// those given to update one.
type WebhookInput struct {
	URL         *string
	Events      []string
	Description *string
	Secret      *string
	Active      *bool
	Filters     *meta.WebhookFilters
}

// checkWebhookHost refuses a webhook URL whose host is an internal
// address (webhooks.Internal), or a name resolving to one, unless the
// settings allow them (DEPOT_WEBHOOK_ALLOW_PRIVATE_NETWORKS): every delivery
// to it would be refused. A name that does not resolve now is let be (a
// receiver may come later; each delivery checks the address it dials).
func (a *App) checkWebhookHost(ctx context.Context, in *WebhookInput) error {
	if in.URL == nil || a.webhookConfig().AllowPrivate {
		return nil
	}
	u, err := url.Parse(*in.URL)
	if err != nil {
		return nil // checkWebhook says what is wrong with it
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, ip)
	} else {
		lookup := a.LookupHost
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		addrs, _ = lookup(ctx, host)
	}
	for _, ip := range addrs {
		if webhooks.Internal(ip) {
			return apierr.Invalid("url", "url %s reaches an internal address (%s): webhooks are delivered there only when the origins run with "+
				"--webhook-allow-private-networks (DEPOT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)", host, ip)
		}
	}
	return nil
}

// checkWebhook validates the fields given.
func (a *App) checkWebhook(tx *meta.Tx, in *WebhookInput) error {
	if in.URL != nil {
		u, err := url.Parse(*in.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || len(*in.URL) > 2048:
			return apierr.Invalid("url", "url must be an absolute http(s) URL without credentials, at most 2048 characters")
		case a.RequireHTTPS && u.Scheme != "https":
			return apierr.Invalid("url", "url must use https (REQUIRE_HTTPS is set)")
		}
	}
	if in.Events != nil {
		if len(in.Events) == 0 || len(in.Events) > len(meta.EventNames) {
			return apierr.Invalid("events", "events must list 1 to %d event names, or [\"*\"]", len(meta.EventNames))
		}
		for _, e := range in.Events {
			if e != "*" && !slices.Contains(meta.EventNames, e) {
				return apierr.Invalid("events", "unknown event %q", e).With("event", e)
			}
		}
	}
	if in.Description != nil && len(*in.Description) > 1024 {
		return apierr.Invalid("description", "description is longer than 1024 characters")
	}
	if in.Secret != nil && len(*in.Secret) > 256 {
		return apierr.Invalid("secret", "secret is longer than 256 characters")
	}
	if f := in.Filters; f != nil {
		if f.RepositoryID != "" {
			repo, err := tx.RepoByRef(f.RepositoryID)
			if err != nil {
				return apierr.Invalid("filters", "filters.repository_id: no repository %s", f.RepositoryID)
			}
			f.RepositoryID = repo.ID // a name given is kept as the id
		}
		if f.UserID != "" {
			if _, err := tx.User(f.UserID); err != nil {
				return apierr.Invalid("filters", "filters.user_id: no user %s", f.UserID)
			}
		}
		if f.Format != "" && !knownFormatIn(tx, f.Format) {
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

// ListWebhooks lists the webhooks (administrators only).
func (a *App) ListWebhooks(_ context.Context, p *auth.Principal) ([]meta.Webhook, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var hooks []meta.Webhook
	err := a.view(func(tx *meta.Tx) error { var err error; hooks, err = tx.Webhooks(); return err })
	return hooks, err
}

// CreateWebhook creates a webhook (administrators only); it is active
// unless Active says otherwise.
func (a *App) CreateWebhook(ctx context.Context, p *auth.Principal, in WebhookInput) (*meta.Webhook, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if in.URL == nil || in.Events == nil {
		return nil, 0, apierr.Invalid("url", "url and events are required")
	}
	if err := a.view(func(tx *meta.Tx) error { return a.checkWebhook(tx, &in) }); err != nil {
		return nil, 0, err
	}
	if err := a.checkWebhookHost(ctx, &in); err != nil {
		return nil, 0, err
	}
	now := a.now()
	h := meta.Webhook{ID: a.NewID(), URL: *in.URL, Events: in.Events, Active: true, CreatedAt: now, UpdatedAt: now}
	if in.Description != nil {
		h.Description = *in.Description
	}
	if in.Secret != nil {
		h.Secret = *in.Secret
	}
	if in.Active != nil {
		h.Active = *in.Active
	}
	if in.Filters != nil {
		h.Filters = *in.Filters
	}
	idx, err := a.commit(ctx, &meta.WebhookCreate{Webhook: h})
	if err != nil {
		return nil, idx, err
	}
	return &h, idx, nil
}

// GetWebhook reads a webhook (administrators only).
func (a *App) GetWebhook(_ context.Context, p *auth.Principal, id string) (*meta.Webhook, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var h *meta.Webhook
	err := a.view(func(tx *meta.Tx) error { var err error; h, err = tx.Webhook(id); return err })
	return h, err
}

// UpdateWebhook changes the fields given (administrators only).
func (a *App) UpdateWebhook(ctx context.Context, p *auth.Principal, id string, in WebhookInput) (*meta.Webhook, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	err := a.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(id); err != nil {
			return err
		}
		return a.checkWebhook(tx, &in)
	})
	if err == nil {
		err = a.checkWebhookHost(ctx, &in)
	}
	if err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, &meta.WebhookUpdate{ID: id, URL: in.URL, Events: in.Events, Description: in.Description, Secret: in.Secret,
		Active: in.Active, Filters: in.Filters, At: a.now()})
	if err != nil {
		return nil, idx, err
	}
	h, err := a.GetWebhook(ctx, p, id)
	return h, idx, err
}

// DeleteWebhook deletes a webhook and its deliveries (administrators only).
func (a *App) DeleteWebhook(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	return a.commit(ctx, &meta.WebhookDelete{ID: id})
}

// webhookConfig is the delivery loop's settings (the defaults without
// one).
func (a *App) webhookConfig() webhooks.Config {
	if a.Webhooks == nil {
		return webhooks.Defaults()
	}
	return a.Webhooks.Config()
}

// webhooksOn refuses manual deliveries while deliveries are off.
func (a *App) webhooksOn() error {
	if !a.webhookConfig().Enabled {
		return apierr.New(apierr.Conflict, "webhook deliveries are disabled on this server (WEBHOOKS_ENABLED=false)")
	}
	return nil
}

// TestWebhook queues a webhook.test delivery to a webhook, even an
// inactive one, and returns the delivery's id (AwaitAttempt waits for its
// attempt).
func (a *App) TestWebhook(ctx context.Context, p *auth.Principal, id string) (string, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return "", 0, err
	}
	if err := a.webhooksOn(); err != nil {
		return "", 0, err
	}
	h, err := a.GetWebhook(ctx, p, id)
	if err != nil {
		return "", 0, err
	}
	now := a.now()
	data, _ := json.Marshal(map[string]string{"webhook_id": h.ID, "message": "This is a test delivery from Depot."})
	e := meta.Event{Name: meta.EventWebhookTest, Timestamp: now, Data: data}
	d := meta.Delivery{ID: a.NewID(), WebhookID: h.ID, Event: e.Name, Body: e.Envelope(), CreatedAt: now, NextAttemptAt: now, Manual: true}
	idx, err := a.commit(ctx, &meta.DeliveryCreate{Delivery: d})
	return d.ID, idx, err
}

// Redeliver queues one more attempt of a webhook's delivery, whatever its
// state, and returns the attempts it had (AwaitAttempt waits for the next).
func (a *App) Redeliver(ctx context.Context, p *auth.Principal, webhookID, id string) (int, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, 0, err
	}
	if err := a.webhooksOn(); err != nil {
		return 0, 0, err
	}
	d, err := a.Delivery(ctx, p, webhookID, id)
	if err != nil {
		return 0, 0, err
	}
	idx, err := a.commit(ctx, &meta.DeliveryRedeliver{ID: d.ID, At: a.now()})
	return d.Attempts, idx, err
}

// AwaitAttempt waits, a little longer than an attempt may take, for a
// delivery's attempt after the first `after`, and returns the delivery
// and whether that attempt was made.
func (a *App) AwaitAttempt(ctx context.Context, id string, after int) (*meta.Delivery, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.webhookConfig().Timeout+5*time.Second)
	defer cancel()
	for {
		applied := a.Store.LastApplied()
		var d *meta.Delivery
		if err := a.view(func(tx *meta.Tx) error { var err error; d, err = tx.Delivery(id); return err }); err != nil {
			return nil, false, err
		}
		if d.Attempts > after {
			return d, true, nil
		}
		if a.Store.WaitIndex(ctx, applied+1) != nil {
			return d, false, nil
		}
	}
}

// Delivery reads a delivery of a webhook (administrators only).
func (a *App) Delivery(_ context.Context, p *auth.Principal, webhookID, id string) (*meta.Delivery, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var d *meta.Delivery
	err := a.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(webhookID); err != nil {
			return err
		}
		var err error
		d, err = tx.Delivery(id)
		return err
	})
	if err == nil && d.WebhookID != webhookID {
		return nil, apierr.New(apierr.NotFound, "delivery %s is not one of webhook %s", d.ID, webhookID)
	}
	return d, err
}

// ListDeliveries pages through a webhook's deliveries, newest first
// (administrators only).
func (a *App) ListDeliveries(_ context.Context, p *auth.Principal, webhookID string, pg Page) (Listing[meta.Delivery], error) {
	out := Listing[meta.Delivery]{Page: pg.clamped()}
	if err := requireAdmin(p); err != nil {
		return out, err
	}
	err := a.view(func(tx *meta.Tx) error {
		if _, err := tx.Webhook(webhookID); err != nil {
			return err
		}
		var err error
		out.Items, out.Total, err = tx.DeliveriesOf(webhookID, out.Page.offset(), out.Page.Limit)
		return err
	})
	return out, err
}
