package webui

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// tokenPage lists the user's API tokens and makes new ones; Secret is
// set once, on the answer to the creation.
type tokenPage struct {
	Tokens     []tokenRow
	Form       tokenForm
	Created    *meta.Token
	Secret     string
	Err, Field string
	Admin      bool
	Expiries   []expiry
}

func (p tokenPage) formError() string { return p.Err }

type tokenRow struct {
	meta.Token
	Expired bool
}

type tokenForm struct {
	Name, Repository string
	Actions          map[string]bool
	GlobalAdmin      bool
	Days             int
}

type expiry struct {
	Days  int
	Label string
}

var expiries = []expiry{{30, "in 30 days"}, {90, "in 90 days"}, {365, "in a year"}, {7, "in 7 days"}, {0, "never"}}

func (u *UI) tokenPage(c *call, p tokenPage) (tokenPage, error) {
	toks, err := u.d.App.ListTokens(c.r.Context(), c.p)
	if err != nil {
		return p, err
	}
	now := u.d.Now()
	for _, t := range toks {
		p.Tokens = append(p.Tokens, tokenRow{Token: t, Expired: t.Expired(now)})
	}
	p.Admin, p.Expiries = c.p.IsAdmin(), expiries
	if p.Form.Actions == nil {
		p.Form = tokenForm{Actions: map[string]bool{"read": true}, Days: 30}
	}
	return p, nil
}

func (u *UI) tokens(w http.ResponseWriter, c *call) error {
	p, err := u.tokenPage(c, tokenPage{})
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "tokens", "API tokens", p)
}

func (u *UI) createToken(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	form := tokenForm{Name: f.Get("name"), Repository: strings.TrimSpace(f.Get("repository")), Actions: map[string]bool{},
		GlobalAdmin: f.Get("global_admin") == "on"}
	form.Days, _ = strconv.Atoi(f.Get("expires_days"))
	var scopes []string
	if form.GlobalAdmin {
		scopes = append(scopes, "admin")
	}
	for _, a := range []string{"read", "write", "delete", "admin"} {
		if f.Get("action_"+a) != "on" {
			continue
		}
		form.Actions[a] = true
		s := "repository:" + a
		if form.Repository != "" {
			s += ":" + form.Repository
		}
		scopes = append(scopes, s)
	}
	in := app.NewToken{Name: form.Name, Scopes: scopes}
	if form.Days > 0 && form.Days <= 3650 {
		exp := u.d.Now().Add(time.Duration(form.Days) * 24 * time.Hour)
		in.ExpiresAt = &exp
	}
	tok, secret, _, err := u.d.App.CreateToken(c.r.Context(), c.p, in)
	page := tokenPage{Form: form}
	if e, ok := refused(err, &page.Field); ok {
		page.Err = e.Message
		if page, err = u.tokenPage(c, page); err != nil {
			return err
		}
		return u.render(w, c, e.Status(), "tokens", "API tokens", page)
	}
	if err != nil {
		return err
	}
	// The secret is shown in this answer only (no redirect that would
	// have to carry it).
	page = tokenPage{Created: tok, Secret: secret}
	if page, err = u.tokenPage(c, page); err != nil {
		return err
	}
	return u.render(w, c, http.StatusCreated, "tokens", "API tokens", page)
}

func (u *UI) revokeToken(w http.ResponseWriter, c *call) error {
	if _, err := u.d.App.RevokeToken(c.r.Context(), c.p, c.r.PathValue("id")); err != nil {
		return err
	}
	u.flash(w, c.r, "The token is revoked: it stops working at once, at every node.")
	http.Redirect(w, c.r, Prefix+"/tokens", http.StatusSeeOther)
	return nil
}
