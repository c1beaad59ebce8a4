package webui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// Settings > Webhooks: administrators list, create, change, test and
// delete webhooks, and follow each one's deliveries (app.ListWebhooks...).

const webhooksPath = Prefix + "/settings/webhooks"

func webhookPath(id string) string { return webhooksPath + "/" + url.PathEscape(id) }

func deliveryPath(hook, id string) string {
	return webhookPath(hook) + "/deliveries/" + url.PathEscape(id)
}

// webhookRow is a webhook in the list, its filters named.
type webhookRow struct {
	meta.Webhook
	Repository string // the repository filter's name ("" when none)
}

type webhookList struct {
	Hooks []webhookRow
}

// allRepositories lists every repository (an administrator reads them
// all), for the choices of a webhook's filter and an edge's assignment.
func (u *UI) allRepositories(c *call) ([]meta.Repository, error) {
	var out []meta.Repository
	for n := 1; n <= maxRepoPages; n++ {
		l, err := u.d.App.ListRepositories(c.r.Context(), c.p, app.RepoFilter{Page: app.Page{Number: n, Limit: app.MaxPageLimit}})
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if len(l.Items) < app.MaxPageLimit || len(out) >= l.Total {
			break
		}
	}
	return out, nil
}

// maxRepoPages bounds the repositories a choice lists (pages of
// app.MaxPageLimit).
const maxRepoPages = 50

func repoName(repos []meta.Repository, id string) string {
	for _, r := range repos {
		if r.ID == id {
			return r.Name
		}
	}
	return id // deleted since: its id
}

func (u *UI) webhooks(w http.ResponseWriter, c *call) error {
	hooks, err := u.d.App.ListWebhooks(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	repos, err := u.allRepositories(c)
	if err != nil {
		return err
	}
	slices.SortStableFunc(hooks, func(a, b meta.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
	l := webhookList{}
	for _, h := range hooks {
		row := webhookRow{Webhook: h}
		if h.Filters.RepositoryID != "" {
			row.Repository = repoName(repos, h.Filters.RepositoryID)
		}
		l.Hooks = append(l.Hooks, row)
	}
	return u.render(w, c, 0, "webhooks", "Webhooks", l)
}

// webhookForm creates or edits a webhook.
type webhookForm struct {
	Hook                   *meta.Webhook // editing it; nil: a new one
	URL, Description       string
	All                    bool // every event ("*")
	Events                 []eventChoice
	Repository, Format     string
	Active                 bool
	HasSecret, ClearSecret bool
	UserFilter             string   // set with the API: kept, shown
	Severity               []string // likewise
	Repos                  []meta.Repository
	UnknownRepo            bool // the repository filter names one not listed (deleted since)
	Formats                []string
	Err, Field             string
}

func (f webhookForm) formError() string { return f.Err }

// eventChoice is one event's checkbox.
type eventChoice struct {
	Name, ID string
	Checked  bool
}

func eventChoices(chosen []string) []eventChoice {
	out := make([]eventChoice, 0, len(meta.EventNames))
	for _, n := range meta.EventNames {
		out = append(out, eventChoice{Name: n, ID: "event-" + strings.ReplaceAll(n, ".", "-"), Checked: slices.Contains(chosen, n)})
	}
	return out
}

// withChoices fills what the form offers to choose from.
func (u *UI) withChoices(c *call, f *webhookForm) error {
	repos, err := u.allRepositories(c)
	if err != nil {
		return err
	}
	f.Repos, f.Formats = repos, u.d.App.ServedFormats()
	f.UnknownRepo = f.Repository != "" && !slices.ContainsFunc(repos, func(r meta.Repository) bool { return r.ID == f.Repository })
	if f.Hook != nil && f.Hook.Filters.UserID != "" {
		f.UserFilter = f.Hook.Filters.UserID
		users, err := u.d.App.ListUsers(c.r.Context(), c.p)
		if err != nil {
			return err
		}
		for _, usr := range users {
			if usr.ID == f.Hook.Filters.UserID {
				f.UserFilter = usr.Username
			}
		}
	}
	return nil
}

func formOf(h *meta.Webhook) webhookForm {
	return webhookForm{Hook: h, URL: h.URL, Description: h.Description, All: slices.Contains(h.Events, "*"), Events: eventChoices(h.Events),
		Repository: h.Filters.RepositoryID, Format: h.Filters.Format, Active: h.Active, HasSecret: h.Secret != "", Severity: h.Filters.Severity}
}

// readWebhookForm reads the posted form into f and the input of the use
// case; an empty secret keeps the one set (unless ClearSecret).
func readWebhookForm(r *http.Request, f *webhookForm) app.WebhookInput {
	pf := r.PostForm
	f.URL, f.Description = strings.TrimSpace(pf.Get("url")), pf.Get("description")
	f.All = pf.Get("event_all") == "on"
	f.Events = eventChoices(pf["event"])
	f.Repository, f.Format = pf.Get("repository"), pf.Get("format")
	f.Active, f.ClearSecret = pf.Get("active") == "on", pf.Get("clear_secret") == "on"
	events := []string{}
	if f.All {
		events = append(events, "*")
	} else {
		for _, e := range f.Events {
			if e.Checked {
				events = append(events, e.Name)
			}
		}
	}
	filters := meta.WebhookFilters{RepositoryID: f.Repository, Format: f.Format}
	if f.Hook != nil { // what this form does not edit stays
		filters.UserID, filters.Severity = f.Hook.Filters.UserID, f.Hook.Filters.Severity
	}
	in := app.WebhookInput{URL: &f.URL, Events: events, Description: &f.Description, Active: &f.Active, Filters: &filters}
	if s := pf.Get("secret"); s != "" {
		in.Secret = &s
	} else if f.ClearSecret {
		in.Secret = &s
	}
	return in
}

func (u *UI) newWebhook(w http.ResponseWriter, c *call) error {
	f := webhookForm{Active: true, Events: eventChoices(nil)}
	if err := u.withChoices(c, &f); err != nil {
		return err
	}
	return u.render(w, c, 0, "webhook", "New webhook", f)
}

func (u *UI) createWebhook(w http.ResponseWriter, c *call) error {
	var f webhookForm
	in := readWebhookForm(c.r, &f)
	h, _, err := u.d.App.CreateWebhook(c.r.Context(), c.p, in)
	if e, ok := refused(err, &f.Field); ok {
		f.Err = e.Message
		if err := u.withChoices(c, &f); err != nil {
			return err
		}
		return u.render(w, c, e.Status(), "webhook", "New webhook", f)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Webhook to "+h.URL+" created: it receives what happens from now on.")
	http.Redirect(w, c.r, webhookPath(h.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) webhook(w http.ResponseWriter, c *call) error {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	f := formOf(h)
	if err := u.withChoices(c, &f); err != nil {
		return err
	}
	return u.render(w, c, 0, "webhook", "Webhook "+h.URL, f)
}

func (u *UI) updateWebhook(w http.ResponseWriter, c *call) error {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	f := webhookForm{Hook: h, HasSecret: h.Secret != "", Severity: h.Filters.Severity}
	in := readWebhookForm(c.r, &f)
	updated, _, err := u.d.App.UpdateWebhook(c.r.Context(), c.p, h.ID, in)
	if e, ok := refused(err, &f.Field); ok {
		f.Err = e.Message
		if err := u.withChoices(c, &f); err != nil {
			return err
		}
		return u.render(w, c, e.Status(), "webhook", "Webhook "+h.URL, f)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Webhook to "+updated.URL+" saved.")
	http.Redirect(w, c.r, webhookPath(h.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) deleteWebhook(w http.ResponseWriter, c *call) error {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := u.d.App.DeleteWebhook(c.r.Context(), c.p, h.ID); err != nil {
		return err
	}
	u.flash(w, c.r, "Webhook to "+h.URL+" deleted, with its deliveries.")
	http.Redirect(w, c.r, webhooksPath, http.StatusSeeOther)
	return nil
}

// attempted says how a delivery's attempt went, for the flash.
func attempted(what string, d *meta.Delivery, made bool) string {
	if !made {
		return what + " is queued: it waits for its turn (the webhook's rate or busy deliveries); this page shows it once made."
	}
	msg := what + " " + d.State
	if d.StatusCode != 0 {
		msg += ": HTTP " + strconv.Itoa(d.StatusCode)
	}
	if d.Error != "" {
		msg += " (" + d.Error + ")"
	}
	return msg + "."
}

// testWebhook sends webhook.test and shows the delivery once attempted.
func (u *UI) testWebhook(w http.ResponseWriter, c *call) error {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	id, _, err := u.d.App.TestWebhook(c.r.Context(), c.p, h.ID)
	if e, ok := refused(err, new(string)); ok && e.Code == apierr.Conflict {
		f := formOf(h)
		f.Err = e.Message
		if err := u.withChoices(c, &f); err != nil {
			return err
		}
		return u.render(w, c, e.Status(), "webhook", "Webhook "+h.URL, f)
	}
	if err != nil {
		return err
	}
	d, made, err := u.d.App.AwaitAttempt(c.r.Context(), id, 0)
	if err != nil {
		return err
	}
	u.flash(w, c.r, attempted("The test delivery", d, made))
	http.Redirect(w, c.r, deliveryPath(h.ID, id), http.StatusSeeOther)
	return nil
}

type deliveryList struct {
	Hook       *meta.Webhook
	Deliveries []meta.Delivery
	Pager      pager
}

func (u *UI) deliveries(w http.ResponseWriter, c *call) error {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	pg := pageOf(c.r)
	l, err := u.d.App.ListDeliveries(c.r.Context(), c.p, h.ID, pg)
	if err != nil {
		return err
	}
	out := deliveryList{Hook: h, Deliveries: l.Items, Pager: pagerOf(c.r, l.Page, l.Total)}
	return u.render(w, c, 0, "deliveries", "Deliveries to "+h.URL, out)
}

type deliveryPage struct {
	Hook     *meta.Webhook
	Delivery *meta.Delivery
	Body     string // the request body, indented
	Err      string
}

func (p deliveryPage) formError() string { return p.Err }

func (u *UI) deliveryPage(c *call) (*deliveryPage, error) {
	h, err := u.d.App.GetWebhook(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	d, err := u.d.App.Delivery(c.r.Context(), c.p, h.ID, c.r.PathValue("delivery"))
	if err != nil {
		return nil, err
	}
	p := &deliveryPage{Hook: h, Delivery: d, Body: string(d.Body)}
	var buf bytes.Buffer
	if json.Indent(&buf, d.Body, "", "  ") == nil {
		p.Body = buf.String()
	}
	return p, nil
}

func (u *UI) delivery(w http.ResponseWriter, c *call) error {
	p, err := u.deliveryPage(c)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "delivery", p.Delivery.Event+" to "+p.Hook.URL, p)
}

// redeliver makes one more attempt of a delivery and shows it once made.
func (u *UI) redeliver(w http.ResponseWriter, c *call) error {
	p, err := u.deliveryPage(c)
	if err != nil {
		return err
	}
	after, _, err := u.d.App.Redeliver(c.r.Context(), c.p, p.Hook.ID, p.Delivery.ID)
	if e, ok := refused(err, new(string)); ok && e.Code == apierr.Conflict {
		p.Err = e.Message
		return u.render(w, c, e.Status(), "delivery", p.Delivery.Event+" to "+p.Hook.URL, p)
	}
	if err != nil {
		return err
	}
	d, made, err := u.d.App.AwaitAttempt(c.r.Context(), p.Delivery.ID, after)
	if err != nil {
		return err
	}
	u.flash(w, c.r, attempted("The new attempt", d, made))
	http.Redirect(w, c.r, deliveryPath(p.Hook.ID, p.Delivery.ID), http.StatusSeeOther)
	return nil
}
