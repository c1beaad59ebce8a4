package api

import (
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// The JSON shapes the API answers with. Secrets (password hashes, token
// hashes) have no field here, so they cannot leak by accident.

type userView struct {
	ID                 string    `json:"id"`
	Username           string    `json:"username"`
	Email              string    `json:"email"`
	DisplayName        string    `json:"display_name"`
	Role               meta.Role `json:"role"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	MustChangePassword bool      `json:"password_change_required"` // the login answer's name
	Source             string    `json:"source"`
	Disabled           bool      `json:"disabled"`              // no credential works
	DisabledBy         string    `json:"disabled_by,omitempty"` // "admin" or "directory"
}

func viewUser(u *meta.User) userView {
	src := u.Source
	if src == "" {
		src = "local"
	}
	return userView{ID: u.ID, Username: u.Username, Email: u.Email, DisplayName: u.DisplayName, Role: u.Role, CreatedAt: u.CreatedAt,
		UpdatedAt: u.UpdatedAt, MustChangePassword: u.MustChangePassword, Source: src, Disabled: u.Disabled, DisabledBy: u.DisabledBy}
}

type tokenView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Hint      string     `json:"token_hint"`
	ExpiresAt *time.Time `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
	Expired   bool       `json:"expired"`
}

func viewToken(t *meta.Token, now time.Time) tokenView {
	return tokenView{ID: t.ID, Name: t.Name, Scopes: t.Scopes, Hint: t.Hint, ExpiresAt: t.ExpiresAt,
		CreatedAt: t.CreatedAt, Expired: t.Expired(now)}
}

type repoView struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Format        string            `json:"format"`
	Description   string            `json:"description"`
	Public        bool              `json:"public"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	ArtifactCount int64             `json:"artifact_count"`
	SizeBytes     int64             `json:"size_bytes"`
	Settings      map[string]string `json:"settings"`
	// Retention is the repository's own retention rule; null: the
	// installation's default (the retention.* settings).
	Retention *meta.Retention `json:"retention"`
}

func viewRepo(r *meta.Repository) repoView {
	settings := r.Settings
	if settings == nil {
		settings = map[string]string{}
	}
	return repoView{ID: r.ID, Name: r.Name, Format: r.Format, Description: r.Description, Public: r.Public,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ArtifactCount: r.ArtifactCount, SizeBytes: r.SizeBytes,
		Settings: settings, Retention: r.Retention}
}
