package webui

import (
	"errors"
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
)

// routes lists every page.
func (u *UI) routes() {
	u.mux.HandleFunc("GET "+Prefix+"/static/{version}/{name}", u.serveStatic)
	u.page("GET /{$}", signedIn, func(w http.ResponseWriter, c *call) error {
		http.Redirect(w, c.r, Prefix+"/repositories", http.StatusSeeOther)
		return nil
	})
	u.page("GET /login", public, u.loginPage)
	u.page("POST /login", public, u.login)
	u.page("GET /login/sso", public, u.loginSSO)
	u.page("POST /logout", pending, u.logout)
	u.page("GET /password", pending, u.passwordPage)
	u.page("POST /password", pending, u.changePassword)

	u.page("GET /repositories", signedIn, u.repositories)
	u.page("GET /repositories/new", signedIn, u.newRepository)
	u.page("POST /repositories/new", signedIn, u.createRepository)
	u.page("GET /repositories/{repo}", signedIn, u.repository)
	u.page("GET /repositories/{repo}/settings", signedIn, u.repositorySettings)
	u.page("POST /repositories/{repo}/settings", signedIn, u.updateRepository)
	u.page("POST /repositories/{repo}/retention", signedIn, u.updateRetention)
	u.page("POST /repositories/{repo}/delete", signedIn, u.deleteRepository)
	u.page("GET /repositories/{repo}/package", signedIn, u.packagePage)
	u.page("GET /repositories/{repo}/version", signedIn, u.versionPage)
	u.page("GET /artifacts/{id}/download", signedIn, u.download)

	u.page("GET /api", signedIn, u.apiPage)
	u.page("GET /search", signedIn, u.search)
	u.page("GET /search/suggest", signedIn, u.suggest)
	u.page("POST /search/reindex", admin, u.reindex)
	u.page("GET /events", signedIn, u.events)
	u.page("GET /stats", admin, u.stats)
	u.page("GET /events/live", signedIn, u.liveEvents)
	u.page("GET /tokens", signedIn, u.tokens)
	u.page("POST /tokens", signedIn, u.createToken)
	u.page("POST /tokens/{id}/revoke", signedIn, u.revokeToken)

	u.page("GET /migrations", admin, u.migrations)
	u.page("POST /migrations", admin, u.createMigration)
	u.page("GET /migrations/{id}", admin, u.migration)
	u.page("POST /migrations/{id}/start", admin, u.moveMigration("start"))
	u.page("POST /migrations/{id}/resume", admin, u.moveMigration("resume"))
	u.page("POST /migrations/{id}/cancel", admin, u.moveMigration("cancel"))
	u.page("GET /signing", signedIn, u.signingKeys)
	u.page("POST /signing", admin, u.createSigningKey)
	u.page("POST /signing/{id}/retire", admin, u.retireSigningKey)
	u.page("POST /signing/{id}/delete", admin, u.deleteSigningKey)
	u.page("POST /signing/sign", signedIn, u.signArtifact)
	u.page("GET /plugins", admin, u.plugins)
	u.page("POST /plugins/{id}/enable", admin, u.setPlugin(true))
	u.page("POST /plugins/{id}/disable", admin, u.setPlugin(false))
	u.page("POST /plugins/{id}/uninstall", admin, u.uninstallPlugin)
	u.uploadPage("POST /plugins", admin, u.installPlugin)
	u.page("GET /backups", admin, u.backups)
	u.page("POST /backups", admin, u.createBackup)
	u.page("GET /backups/{id}/download", admin, u.downloadBackup)
	u.page("POST /backups/{id}/restore", admin, u.restoreBackup)
	u.page("POST /backups/{id}/delete", admin, u.deleteBackup)
	u.page("GET /security", signedIn, u.security)
	u.page("GET /security/scans/{id}", signedIn, u.scanDetail)
	u.page("POST /security/scans", signedIn, u.requestScan)
	u.uploadPage("POST /security/advisories", admin, u.loadAdvisories)
	u.page("GET /security/policies/new", admin, u.newPolicy)
	u.page("POST /security/policies/new", admin, u.savePolicy)
	u.page("GET /security/policies/{id}", admin, u.editPolicy)
	u.page("POST /security/policies/{id}", admin, u.savePolicy)
	u.page("POST /security/policies/{id}/delete", admin, u.deletePolicy)
	u.page("GET /cleanup", admin, u.cleanup)
	u.page("POST /cleanup", admin, u.runCleanup)
	u.page("GET /settings", admin, u.settingsPage)
	u.page("POST /settings", admin, u.changeSettings)
	u.page("GET /settings/webhooks", admin, u.webhooks)
	u.page("GET /settings/webhooks/new", admin, u.newWebhook)
	u.page("POST /settings/webhooks/new", admin, u.createWebhook)
	u.page("GET /settings/webhooks/{id}", admin, u.webhook)
	u.page("POST /settings/webhooks/{id}", admin, u.updateWebhook)
	u.page("POST /settings/webhooks/{id}/delete", admin, u.deleteWebhook)
	u.page("POST /settings/webhooks/{id}/test", admin, u.testWebhook)
	u.page("GET /settings/webhooks/{id}/deliveries", admin, u.deliveries)
	u.page("GET /settings/webhooks/{id}/deliveries/{delivery}", admin, u.delivery)
	u.page("POST /settings/webhooks/{id}/deliveries/{delivery}/redeliver", admin, u.redeliver)
	u.page("GET /edges", admin, u.edges)
	u.page("POST /edges", admin, u.createEdge)
	u.page("GET /edges/{id}", admin, u.edge)
	u.page("POST /edges/{id}/assign", admin, u.assignEdge)
	u.page("POST /edges/{id}/repositories/{repo}/unassign", admin, u.unassignEdge)
	u.page("POST /edges/{id}/delete", admin, u.deleteEdge)
	u.page("GET /cluster", admin, u.cluster)
	u.page("GET /users", admin, u.users)
	u.page("GET /users/new", admin, u.newUser)
	u.page("POST /users/new", admin, u.createUser)
	u.page("GET /users/{user}", admin, u.userDetails)
	u.page("POST /users/{user}/disable", admin, u.setDisabled(true))
	u.page("POST /users/{user}/enable", admin, u.setDisabled(false))
	u.page("POST /users/{user}/delete", admin, u.deleteUser)
	u.page("GET /groups", admin, u.groups)
	u.page("POST /groups", admin, u.createGroup)
	u.page("GET /groups/{id}", admin, u.group)
	u.page("POST /groups/{id}/members", admin, u.addMembers)
	u.page("POST /groups/{id}/members/{user}/remove", admin, u.removeMember)
	// A repository's permissions are its administrators' too: the app
	// decides; the list of every grant is the administrators' (grant,
	// revoke and permissions check it).
	u.page("GET /permissions", signedIn, u.permissions)
	u.page("POST /permissions", signedIn, u.grant)
	u.page("POST /permissions/{id}/revoke", signedIn, u.revoke)

	u.page("/", public, func(http.ResponseWriter, *call) error {
		return apierr.New(apierr.NotFound, "there is no such page")
	})
}

// loginForm is the sign-in page.
type loginForm struct {
	Username, Next string
	SSO            bool // single sign-on is set up
	Err            string
}

func (f loginForm) formError() string { return f.Err }

// maxNext bounds the page a sign-in returns to.
const maxNext = 512

func (u *UI) loginPage(w http.ResponseWriter, c *call) error {
	next := c.r.URL.Query().Get("next")
	if c.p != nil {
		http.Redirect(w, c.r, safeNext(next), http.StatusSeeOther)
		return nil
	}
	if len(next) > maxNext {
		next = ""
	}
	return u.render(w, c, 0, "login", "Sign in", loginForm{Next: next, SSO: u.d.App.OIDC != nil})
}

func (u *UI) login(w http.ResponseWriter, c *call) error {
	f := loginForm{Username: c.r.PostForm.Get("username"), Next: c.r.PostForm.Get("next"), SSO: u.d.App.OIDC != nil}
	pair, _, err := u.d.SignIn(c.r, app.Credentials{Username: f.Username, Password: c.r.PostForm.Get("password")})
	if err != nil {
		e := apierr.As(err)
		if e == nil {
			return err
		}
		f.Err = e.Message
		if e.Code == apierr.Unauthorized {
			f.Err = "The username or the password is not right."
		}
		return u.render(w, c, e.Status(), "login", "Sign in", f)
	}
	u.startSession(w, c.r, pair)
	if pair.PasswordChangeRequired {
		http.Redirect(w, c.r, Prefix+"/password", http.StatusSeeOther)
		return nil
	}
	http.Redirect(w, c.r, safeNext(f.Next), http.StatusSeeOther)
	return nil
}

// loginSSO sends the browser to the identity provider; the API's
// callback brings it back through SignedIn.
func (u *UI) loginSSO(w http.ResponseWriter, c *call) error {
	next := safeNext(c.r.URL.Query().Get("next"))
	if len(next) > maxNext {
		next = Prefix + "/"
	}
	return u.d.BeginSSO(w, c.r, next)
}

func (u *UI) logout(w http.ResponseWriter, c *call) error {
	if _, err := u.d.App.SignOut(c.r.Context(), c.p); err != nil {
		return err
	}
	u.clearSession(w, c.r)
	u.flash(w, c.r, "You are signed out.")
	http.Redirect(w, c.r, Prefix+"/login", http.StatusSeeOther)
	return nil
}

// passwordForm is the password change, forced after the first sign-in
// with an initial password.
type passwordForm struct {
	Forced   bool
	Err      string
	Field    string
	Disabled string // why this account cannot change it here
}

func (f passwordForm) formError() string { return f.Err }

func (u *UI) passwordPage(w http.ResponseWriter, c *call) error {
	f := passwordForm{Forced: c.p.MustChangePassword}
	if src := c.user.Source; src != "" && src != "local" {
		f.Disabled = "Your password is kept by your organisation's directory (" + src + "): change it there."
	}
	return u.render(w, c, 0, "password", "Change your password", f)
}

func (u *UI) changePassword(w http.ResponseWriter, c *call) error {
	f := passwordForm{Forced: c.p.MustChangePassword}
	pw, again := c.r.PostForm.Get("password"), c.r.PostForm.Get("password_again")
	if pw != again {
		f.Err, f.Field = "The two new passwords differ.", "password_again"
		return u.render(w, c, http.StatusBadRequest, "password", "Change your password", f)
	}
	_, _, err := u.d.App.UpdateMe(c.r.Context(), c.p, app.AccountChange{CurrentPassword: c.r.PostForm.Get("current_password"), Password: &pw})
	var e *apierr.Error
	if errors.As(err, &e) && e.Status() < 500 {
		f.Err = e.Message
		f.Field, _ = e.Details["field"].(string)
		return u.render(w, c, e.Status(), "password", "Change your password", f)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Your password is changed; your other sessions are signed out.")
	http.Redirect(w, c.r, Prefix+"/", http.StatusSeeOther)
	return nil
}
