package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/depot-registry/depot/origin/service/migrate"
	"github.com/depot-registry/depot/origin/service/migrate/artifactory"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// MigrationInput is POST /migrations, in either of its shapes: A
// (source_url, source_username, source_password: an Artifactory) or B
// (source {type, url, username, password}, options).
type MigrationInput struct {
	SourceURL      string `json:"source_url,omitempty"`
	SourceUsername string `json:"source_username,omitempty"`
	SourcePassword string `json:"source_password,omitempty"`
	Source         *struct {
		Type     string `json:"type"`
		URL      string `json:"url"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"source,omitempty"`
	Repositories  []string               `json:"repositories"`
	RepositoryMap map[string]string      `json:"repository_map,omitempty"`
	Options       *MigrationOptionsInput `json:"options,omitempty"`
}

// MigrationOptionsInput are a migration's options as asked (absent
// values take the defaults).
type MigrationOptionsInput struct {
	IncludeMetadata    *bool `json:"include_metadata"`
	IncludePermissions bool  `json:"include_permissions"`
	ValidateChecksums  *bool `json:"validate_checksums"`
	ParallelTransfers  int   `json:"parallel_transfers"`
	BatchSize          int   `json:"batch_size"`
	RetryAttempts      *int  `json:"retry_attempts"`
	TimeoutSeconds     int   `json:"timeout_seconds"`
	DryRun             bool  `json:"dry_run"`
}

// migration is the migration (parsed from in) that p asks for.
func (in MigrationInput) migration(p *auth.Principal) (meta.Migration, error) {
	m := meta.Migration{Repositories: in.Repositories, Targets: in.RepositoryMap, CreatedBy: p.Name(), CreatedByID: p.UserID,
		Options: meta.MigrationOptions{IncludeMetadata: true, ValidateChecksums: true, RetryAttempts: migrate.DefaultRetries}}
	switch {
	case in.Source != nil && in.SourceURL != "":
		return m, apierr.Invalid("source", "give either source (shape B) or source_url (shape A), not both")
	case in.Source != nil:
		m.Source = meta.MigrationSource{Type: strings.ToLower(in.Source.Type), URL: in.Source.URL, Username: in.Source.Username, Password: in.Source.Password}
	default:
		m.Source = meta.MigrationSource{Type: "artifactory", URL: in.SourceURL, Username: in.SourceUsername, Password: in.SourcePassword}
	}
	if m.Source.Type == "" {
		m.Source.Type = "artifactory"
	}
	if m.Source.Type != "artifactory" {
		return m, apierr.Invalid("source.type", "source type %q is not one this registry reads: artifactory", m.Source.Type)
	}
	if u, err := url.Parse(m.Source.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return m, apierr.Invalid("source_url", "the source's URL, http(s)://host/artifactory, is required")
	}
	if len(m.Repositories) == 0 || len(m.Repositories) > meta.MaxMigrationRepositories {
		return m, apierr.Invalid("repositories", "name 1 to %d of the source's repositories", meta.MaxMigrationRepositories)
	}
	seen := map[string]bool{}
	for _, r := range m.Repositories {
		if r == "" || len(r) > 256 || seen[r] {
			return m, apierr.Invalid("repositories", "each repository named once, by its key")
		}
		seen[r] = true
	}
	for src, dst := range m.Targets {
		if !seen[src] {
			return m, apierr.Invalid("repository_map", "%q is not one of the repositories migrated", src)
		}
		if !PortableName(dst) {
			return m, apierr.Invalid("repository_map", "%s: %q is not a repository name here", src, dst)
		}
	}
	if o := in.Options; o != nil {
		if o.IncludeMetadata != nil {
			m.Options.IncludeMetadata = *o.IncludeMetadata
		}
		if o.ValidateChecksums != nil {
			m.Options.ValidateChecksums = *o.ValidateChecksums
		}
		if o.RetryAttempts != nil {
			m.Options.RetryAttempts = *o.RetryAttempts
		}
		m.Options.IncludePermissions, m.Options.ParallelTransfers, m.Options.BatchSize = o.IncludePermissions, o.ParallelTransfers, o.BatchSize
		m.Options.TimeoutSeconds, m.Options.DryRun = o.TimeoutSeconds, o.DryRun
	}
	opts, field, why := migrate.Options(m.Options)
	if field != "" {
		return m, apierr.Invalid(field, "%s", why)
	}
	m.Options = opts
	return m, nil
}

// CreateMigration makes a migration (administrators), pending until
// started, once the source answered, took the credentials and has every
// repository named: a source that cannot be used is refused now, not in
// the job.
func (a *App) CreateMigration(ctx context.Context, p *auth.Principal, in MigrationInput) (*meta.Migration, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if a.Migrator == nil {
		return nil, 0, apierr.New(apierr.Unavailable, "migrations are not available on this node")
	}
	m, err := in.migration(p)
	if err != nil {
		return nil, 0, err
	}
	if _, err := a.Migrator.CheckSource(ctx, m.Source, m.Repositories); err != nil {
		return nil, 0, sourceError(err)
	}
	m.ID, m.Status, m.CreatedAt = a.NewID(), meta.MigrationPending, a.now().UTC()
	idx, err := a.commit(ctx, meta.NewMigrationPut(m, true, ""))
	if err != nil {
		return nil, idx, err
	}
	out := m
	out.Source.Password, out.CreatedByID = "", ""
	return &out, idx, nil
}

// sourceError is what a source's refusal is to the caller.
func sourceError(err error) error {
	var missing *migrate.MissingError
	var status *artifactory.StatusError
	switch {
	case errors.Is(err, artifactory.ErrUnauthorized):
		return apierr.Invalid("source", "the source refused the credentials (401): check the username and password or token")
	case errors.As(err, &missing):
		return apierr.New(apierr.ValidationFailed, "%v", err).With("missing_repositories", missing.Repositories)
	case errors.As(err, &status):
		return apierr.Invalid("source", "%v", err)
	}
	return apierr.Invalid("source", "the source cannot be used: %v", err)
}

// Migrations lists the migrations, newest first (administrators).
func (a *App) Migrations(_ context.Context, p *auth.Principal) ([]meta.Migration, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var out []meta.Migration
	err := a.view(func(tx *meta.Tx) error {
		var err error
		out, err = tx.Migrations()
		return err
	})
	return out, err
}

// Migration is one migration (administrators), without its secrets.
func (a *App) Migration(_ context.Context, p *auth.Principal, id string) (*meta.Migration, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var m *meta.Migration
	err := a.view(func(tx *meta.Tx) error {
		var err error
		m, err = tx.Migration(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	m.Source.Password, m.CreatedByID = "", ""
	return m, nil
}

// MoveMigration starts a pending migration, resumes an interrupted one
// (action "start", "resume") or cancels one not finished ("cancel").
func (a *App) MoveMigration(ctx context.Context, p *auth.Principal, id, action string) (*meta.Migration, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if a.Migrator == nil {
		return nil, 0, apierr.New(apierr.Unavailable, "migrations are not available on this node")
	}
	var m *meta.Migration
	if err := a.view(func(tx *meta.Tx) error { var err error; m, err = tx.Migration(id); return err }); err != nil {
		return nil, 0, err
	}
	was := m.Status
	switch {
	case action == "start" && was == meta.MigrationPending, action == "resume" && was == meta.MigrationInterrupted:
		m.Status, m.Node, m.Error = meta.MigrationInProgress, "", ""
	case action == "cancel" && !meta.MigrationDone(was):
		m.Status = meta.MigrationCancelled
		now := a.now().UTC()
		m.FinishedAt = &now
	case action == "start" || action == "resume":
		how := map[string]string{meta.MigrationPending: "; start it", meta.MigrationInterrupted: "; resume it"}[was]
		return nil, 0, apierr.New(apierr.Conflict, "the migration is %s: only %s one can be %s%s", was,
			map[string]string{"start": "a pending", "resume": "an interrupted"}[action], strings.TrimSuffix(action, "e")+"ed", how)
	default:
		return nil, 0, apierr.New(apierr.Conflict, "the migration is %s already", was)
	}
	idx, err := a.commit(ctx, meta.NewMigrationPut(*m, false, was))
	if err != nil {
		return nil, idx, err
	}
	a.Migrator.Wake()
	m.Source.Password, m.CreatedByID = "", ""
	return m, idx, nil
}

// MigrationEntries lists a migration's log lines or failures (kind "log",
// "failure"), from after on (administrators).
func (a *App) MigrationEntries(_ context.Context, p *auth.Principal, id, kind string, after, limit int) ([]meta.MigrationEntry, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var out []meta.MigrationEntry
	err := a.view(func(tx *meta.Tx) error {
		if _, err := tx.Migration(id); err != nil {
			return err
		}
		var err error
		out, err = tx.MigrationEntries(id, kind, after, limit)
		return err
	})
	if out == nil {
		out = []meta.MigrationEntry{}
	}
	return out, err
}

// MigrationReport is a migration's report.
type MigrationReport struct {
	ID        string                 `json:"migration_id"`
	Status    string                 `json:"status"`
	Totals    meta.MigrationProgress `json:"totals"`
	Checksums struct {
		Verified int64 `json:"verified"`
		Failed   int64 `json:"failed"`
		Skipped  bool  `json:"skipped"` // validate_checksums was false
	} `json:"checksum_verification"`
	Repositories []string              `json:"repositories_done"`
	Failures     []meta.MigrationEntry `json:"failures"`
	Metadata     string                `json:"metadata_migration"`
	Permissions  string                `json:"permission_migration"`
}

// Report is a migration's report: totals, checksum verification, the
// failures (the first thousand) and what became of metadata and
// permissions.
func (a *App) Report(ctx context.Context, p *auth.Principal, id string) (*MigrationReport, error) {
	m, err := a.Migration(ctx, p, id)
	if err != nil {
		return nil, err
	}
	failures, err := a.MigrationEntries(ctx, p, id, "failure", 0, 1000)
	if err != nil {
		return nil, err
	}
	r := &MigrationReport{ID: m.ID, Status: m.Status, Totals: m.Progress, Repositories: m.Done, Failures: failures,
		Metadata: fmt.Sprintf("upload times and uploaders kept as the source gives them; properties kept on %d artifacts (%d beyond this registry's bounds dropped, named in the log)",
			m.Progress.WithProperties, m.Progress.PropertiesDropped),
		Permissions: "not migrated yet: the migration has not reached them"}
	r.Checksums.Verified, r.Checksums.Skipped = m.Progress.Verified, !m.Options.ValidateChecksums
	switch {
	case m.Permissions != "":
		r.Permissions = m.Permissions
	case !m.Options.IncludePermissions:
		r.Permissions = "not migrated (include_permissions was false)"
	}
	if !m.Options.IncludeMetadata {
		r.Metadata = "not migrated (include_metadata was false): the uploader here is the migration's creator, the upload time the migration's"
	}
	for _, f := range failures {
		if strings.HasPrefix(f.Message, "checksum mismatch") {
			r.Checksums.Failed++
		}
	}
	return r, nil
}
