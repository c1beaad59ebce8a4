package api

import (
	"encoding/json"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// The bodies of the requests the API reads and of the listings it
// answers, named once here: the handlers decode and encode them, and the
// OpenAPI document describes them from these same types.

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type refreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

type newUserRequest struct {
	Username string    `json:"username"`
	Email    string    `json:"email"`
	Password string    `json:"password"`
	Role     meta.Role `json:"role"`
	// Source: local (default), or ldap or oidc for a directory's user
	// made before their first sign-in (no password).
	Source string `json:"source,omitempty"`
}

type accountRequest struct {
	Email           *string `json:"email,omitempty"`
	DisplayName     *string `json:"display_name,omitempty"`
	CurrentPassword string  `json:"current_password,omitempty"`
	Password        *string `json:"password,omitempty"`
}

type userChangeRequest struct {
	Disabled *bool `json:"disabled"`
}

type newTokenRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

type newGroupRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type groupMembersRequest struct {
	UserIDs []string `json:"user_ids"`
}

type newPermissionRequest struct {
	RepositoryID string   `json:"repository_id"`
	UserID       string   `json:"user_id,omitempty"`
	GroupID      string   `json:"group_id,omitempty"`
	Permissions  []string `json:"permissions"`
}

type newRepoRequest struct {
	Name        string `json:"name"`
	Format      string `json:"format"`
	Description string `json:"description,omitempty"`
	// Public: absent takes the repositories.default_public setting.
	Public    *bool             `json:"public,omitempty"`
	Settings  map[string]string `json:"settings,omitempty"`
	Retention *meta.Retention   `json:"retention,omitempty"`
}

type repoChangeRequest struct {
	Description *string           `json:"description,omitempty"`
	Public      *bool             `json:"public,omitempty"`
	Name        *string           `json:"name,omitempty"`
	Format      *string           `json:"format,omitempty"`
	Settings    map[string]string `json:"settings,omitempty"`
	// Retention: a rule, or null to go back to the default rule.
	Retention retentionField `json:"retention"`
}

// retentionField is a body's retention rule: absent (Set false), null
// (the installation's default) or a rule.
type retentionField struct {
	Set  bool
	Rule *meta.Retention
}

func (f *retentionField) UnmarshalJSON(b []byte) error {
	f.Set, f.Rule = true, nil
	if string(b) == "null" {
		return nil
	}
	f.Rule = new(meta.Retention)
	return json.Unmarshal(b, f.Rule)
}

func (f retentionField) MarshalJSON() ([]byte, error) { return json.Marshal(f.Rule) }

type newEdgeRequest struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Region string `json:"region,omitempty"`
}

type assignRequest struct {
	RepositoryID  string   `json:"repository_id,omitempty"`
	RepositoryIDs []string `json:"repository_ids,omitempty"`
}

// The listings.

type userList struct {
	Users []userView `json:"users"`
	Total int        `json:"total"`
}

type tokenList struct {
	Tokens []tokenView `json:"tokens"`
}

// tokenCreated is a new token with its secret, shown this once.
type tokenCreated struct {
	tokenView
	Token string `json:"token"`
}

type groupList struct {
	Groups []meta.Group `json:"groups"`
	Total  int          `json:"total"`
}

type permissionList struct {
	Permissions []meta.Permission `json:"permissions"`
	Total       int               `json:"total"`
}

type repoList struct {
	Repositories []repoView `json:"repositories"`
	Total        int        `json:"total"`
	Page         int        `json:"page"`
	Limit        int        `json:"limit"`
}

type packageList struct {
	Packages []meta.PackageSummary `json:"packages"`
	Total    int                   `json:"total"`
	Page     int                   `json:"page"`
	Limit    int                   `json:"limit"`
}

type versionList struct {
	Name     string                `json:"name"`
	Versions []meta.VersionSummary `json:"versions"`
}

type webhookList struct {
	Webhooks []webhookView `json:"webhooks"`
	Total    int           `json:"total"`
}

type deliveryList struct {
	Deliveries []deliveryView `json:"deliveries"`
	Total      int            `json:"total"`
	Page       int            `json:"page"`
	Limit      int            `json:"limit"`
}

type edgeList struct {
	EdgeNodes []app.EdgeNode `json:"edge_nodes"`
	Total     int            `json:"total"`
}

// edgeCreated is a registered node with its credential, shown this once.
type edgeCreated struct {
	*app.EdgeNode
	Token string `json:"token"`
}

type eventPage struct {
	Events     []app.Event `json:"events"`
	NextCursor string      `json:"next_cursor"`
	Missed     bool        `json:"missed,omitempty"`
}

// healthAnswer is the health check's answer; a signed-in caller also gets
// the node's details (more fields, varying with the node).
type healthAnswer struct {
	Status   string   `json:"status"`
	Reasons  []string `json:"reasons,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}
