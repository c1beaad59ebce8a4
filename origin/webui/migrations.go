package webui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// The migrations page (administrators): the migrations with their status
// and progress (the page refreshes itself while one runs), each one's log
// and failures, start, resume and cancel, and a form making one from an
// Artifactory.

const migrationsPath = Prefix + "/migrations"

type migrationsPage struct {
	Migrations []meta.Migration
	Busy       bool
	// The form's values.
	URL, Username, Repositories string
	Permissions                 bool
	Err, Field                  string
}

func (p migrationsPage) formError() string { return p.Err }

func (u *UI) migrationsList(w http.ResponseWriter, c *call, status int, p migrationsPage) error {
	var err error
	if p.Migrations, err = u.d.App.Migrations(c.r.Context(), c.p); err != nil {
		return err
	}
	for _, m := range p.Migrations {
		p.Busy = p.Busy || m.Status == meta.MigrationInProgress
	}
	if p.Busy {
		w.Header().Set("Refresh", "3")
	}
	return u.render(w, c, status, "migrations", "Migrations", p)
}

func (u *UI) migrations(w http.ResponseWriter, c *call) error {
	return u.migrationsList(w, c, 0, migrationsPage{})
}

// createMigration makes a migration and starts it.
func (u *UI) createMigration(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	p := migrationsPage{URL: strings.TrimSpace(f.Get("url")), Username: strings.TrimSpace(f.Get("username")),
		Repositories: strings.TrimSpace(f.Get("repositories")), Permissions: f.Get("include_permissions") == "on"}
	in := app.MigrationInput{SourceURL: p.URL, SourceUsername: p.Username, SourcePassword: f.Get("password")}
	for _, r := range strings.Split(p.Repositories, ",") {
		if r = strings.TrimSpace(r); r != "" {
			in.Repositories = append(in.Repositories, r)
		}
	}
	if p.Permissions {
		in.Options = &app.MigrationOptionsInput{IncludePermissions: true}
	}
	m, _, err := u.d.App.CreateMigration(c.r.Context(), c.p, in)
	if err == nil {
		m, _, err = u.d.App.MoveMigration(c.r.Context(), c.p, m.ID, "start")
	}
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.migrationsList(w, c, e.Status(), p)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Migration "+m.ID+" started: the cluster's leader runs it in the background.")
	http.Redirect(w, c.r, migrationsPath+"/"+url.PathEscape(m.ID), http.StatusSeeOther)
	return nil
}

type migrationPage struct {
	Migration *meta.Migration
	Log       []meta.MigrationEntry
	Failures  []meta.MigrationEntry
	Report    *app.MigrationReport
}

func (u *UI) migration(w http.ResponseWriter, c *call) error {
	id := c.r.PathValue("id")
	m, err := u.d.App.Migration(c.r.Context(), c.p, id)
	if err != nil {
		return err
	}
	p := migrationPage{Migration: m}
	if p.Log, err = u.d.App.MigrationEntries(c.r.Context(), c.p, id, "log", 0, 200); err != nil {
		return err
	}
	if p.Failures, err = u.d.App.MigrationEntries(c.r.Context(), c.p, id, "failure", 0, 200); err != nil {
		return err
	}
	if meta.MigrationDone(m.Status) {
		if p.Report, err = u.d.App.Report(c.r.Context(), c.p, id); err != nil {
			return err
		}
	}
	if m.Status == meta.MigrationInProgress {
		w.Header().Set("Refresh", "3")
	}
	return u.render(w, c, 0, "migration", "Migration", p)
}

// moveMigration starts, resumes or cancels a migration.
func (u *UI) moveMigration(action string) handler {
	return func(w http.ResponseWriter, c *call) error {
		id := c.r.PathValue("id")
		_, _, err := u.d.App.MoveMigration(c.r.Context(), c.p, id, action)
		return u.after(w, c, err, "Migration "+action+" asked.", migrationsPath+"/"+url.PathEscape(id))
	}
}
