package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Item is one resource as the API answered it: the fields the CLI shows
// (Value) and the server's JSON as it came (Raw), which --output json
// prints unchanged, fields the CLI does not know included.
type Item[T any] struct {
	Value T
	Raw   json.RawMessage
}

// UnmarshalJSON keeps the raw object beside the decoded value.
func (i *Item[T]) UnmarshalJSON(b []byte) error {
	i.Raw = append(json.RawMessage(nil), b...)
	return json.Unmarshal(b, &i.Value)
}

// MarshalJSON is the server's JSON.
func (i Item[T]) MarshalJSON() ([]byte, error) { return i.Raw, nil }

// The fields of the API's resources the CLI shows or needs (origin/api
// answers more; Raw keeps them).

// Repository is a repository.
type Repository struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Format        string    `json:"format"`
	Description   string    `json:"description"`
	Public        bool      `json:"public"`
	ArtifactCount int64     `json:"artifact_count"`
	SizeBytes     int64     `json:"size_bytes"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// User is a user account.
type User struct {
	ID                     string    `json:"id"`
	Username               string    `json:"username"`
	Email                  string    `json:"email"`
	Role                   string    `json:"role"`
	Source                 string    `json:"source"`
	PasswordChangeRequired bool      `json:"password_change_required"`
	Disabled               bool      `json:"disabled"` // no credential of the user works
	CreatedAt              time.Time `json:"created_at"`
}

// Token is an API token of the caller's; Token (the secret) is in the
// answer to its creation only.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Hint      string     `json:"token_hint"`
	ExpiresAt *time.Time `json:"expires_at"`
	Expired   bool       `json:"expired"`
	CreatedAt time.Time  `json:"created_at"`
	Token     string     `json:"token"`
}

// EdgeNode is a registered edge node; Token (its credential) is in the
// answer to its registration only.
type EdgeNode struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	URL          string     `json:"url"`
	Region       string     `json:"region"`
	Status       string     `json:"status"`
	LastContact  *time.Time `json:"last_contact"`
	Lag          *uint64    `json:"lag"`
	Version      string     `json:"version"`
	Repositories []struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Format string `json:"format"`
	} `json:"repositories"`
	CreatedAt time.Time `json:"created_at"`
	Token     string    `json:"token"`
}

// Webhook is a webhook; Secret is in the answer to its creation only.
// Plugin is a plugin: a format handler, built in or installed.
type Plugin struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Enabled  bool     `json:"enabled"`
	Builtin  bool     `json:"builtin"`
	Formats  []string `json:"formats"`
	Prefixes []string `json:"prefixes"`
	Module   *struct {
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"module"`
	LoadError string `json:"load_error"`
}

type Webhook struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Active      bool      `json:"active"`
	HasSecret   bool      `json:"has_secret"`
	Secret      string    `json:"secret"`
	CreatedAt   time.Time `json:"created_at"`
	Filters     struct {
		RepositoryID string `json:"repository_id"`
		Format       string `json:"format"`
	} `json:"filters"`
}

// TokenPair is the answer to a login.
type TokenPair struct {
	AccessToken            string `json:"access_token"`
	RefreshToken           string `json:"refresh_token"`
	PasswordChangeRequired bool   `json:"password_change_required"`
}

// The request bodies, as the API names their fields.

// NewRepository is POST /repositories.
type NewRepository struct {
	Name        string `json:"name"`
	Format      string `json:"format"`
	Description string `json:"description,omitempty"`
	Public      bool   `json:"public"`
}

// NewUser is POST /users.
type NewUser struct {
	Username string `json:"username"`
	Email    string `json:"email,omitempty"`
	Password string `json:"password"`
	Role     string `json:"role,omitempty"`
}

// NewToken is POST /users/me/tokens.
type NewToken struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// NewEdgeNode is POST /edge-nodes.
type NewEdgeNode struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Region string `json:"region,omitempty"`
}

// NewWebhook is POST /webhooks.
type NewWebhook struct {
	URL         string         `json:"url"`
	Events      []string       `json:"events"`
	Description string         `json:"description,omitempty"`
	Secret      string         `json:"secret,omitempty"`
	Active      *bool          `json:"active,omitempty"`
	Filters     map[string]any `json:"filters,omitempty"`
}

// Login signs in with a password (POST /auth/login).
func (c *Client) Login(ctx context.Context, username, password string) (TokenPair, error) {
	var p TokenPair
	err := c.do(ctx, http.MethodPost, "/auth/login", nil, map[string]string{"username": username, "password": password}, &p)
	return p, err
}

// Logout ends the session of the client's access token.
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/auth/logout", nil, nil, nil)
}

// Me is the signed-in user.
func (c *Client) Me(ctx context.Context) (Item[User], error) {
	var u Item[User]
	return u, c.do(ctx, http.MethodGet, "/users/me", nil, nil, &u)
}

// ChangePassword changes the signed-in user's password (PUT /users/me).
func (c *Client) ChangePassword(ctx context.Context, current, password string) error {
	return c.do(ctx, http.MethodPut, "/users/me", nil, map[string]string{"current_password": current, "password": password}, nil)
}

// maxListPages bounds a paged listing: 100 pages of 100.
const maxListPages = 100

// Repositories lists the repositories the caller may read, page after
// page (at most maxListPages); more is true when some were left.
func (c *Client) Repositories(ctx context.Context, format string) (items []Item[Repository], more bool, err error) {
	for page := 1; page <= maxListPages; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "limit": {"100"}}
		if format != "" {
			q.Set("format", format)
		}
		var l struct {
			Repositories []Item[Repository] `json:"repositories"`
			Total        int                `json:"total"`
		}
		if err := c.do(ctx, http.MethodGet, "/repositories", q, nil, &l); err != nil {
			return nil, false, err
		}
		items = append(items, l.Repositories...)
		if len(l.Repositories) == 0 || len(items) >= l.Total {
			return items, false, nil
		}
	}
	return items, true, nil
}

// Repository is one repository, by id or name.
func (c *Client) Repository(ctx context.Context, ref string) (Item[Repository], error) {
	var r Item[Repository]
	return r, c.do(ctx, http.MethodGet, pathOf("repositories", ref), nil, nil, &r)
}

// CreateRepository creates a repository.
func (c *Client) CreateRepository(ctx context.Context, in NewRepository) (Item[Repository], error) {
	var r Item[Repository]
	return r, c.do(ctx, http.MethodPost, "/repositories", nil, in, &r)
}

// DeleteRepository deletes a repository, by id or name.
func (c *Client) DeleteRepository(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodDelete, pathOf("repositories", ref), nil, nil, nil)
}

// Users lists every user (the API answers them all at once).
func (c *Client) Users(ctx context.Context) ([]Item[User], error) {
	var l struct {
		Users []Item[User] `json:"users"`
	}
	return l.Users, c.do(ctx, http.MethodGet, "/users", nil, nil, &l)
}

// CreateUser creates a local user.
func (c *Client) CreateUser(ctx context.Context, in NewUser) (Item[User], error) {
	var u Item[User]
	return u, c.do(ctx, http.MethodPost, "/users", nil, in, &u)
}

// DeleteUser deletes a user by id.
func (c *Client) DeleteUser(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, pathOf("users", id), nil, nil, nil)
}

// SetUserDisabled disables a user, by id, or enables one again
// (PUT /users/:id); the answer is the user as it now is.
func (c *Client) SetUserDisabled(ctx context.Context, id string, disabled bool) (Item[User], error) {
	var u Item[User]
	return u, c.do(ctx, http.MethodPut, pathOf("users", id), nil, map[string]bool{"disabled": disabled}, &u)
}

// Tokens lists the caller's API tokens.
func (c *Client) Tokens(ctx context.Context) ([]Item[Token], error) {
	var l struct {
		Tokens []Item[Token] `json:"tokens"`
	}
	return l.Tokens, c.do(ctx, http.MethodGet, "/users/me/tokens", nil, nil, &l)
}

// CreateToken creates an API token for the caller; the answer carries
// its secret, this once.
func (c *Client) CreateToken(ctx context.Context, in NewToken) (Item[Token], error) {
	var t Item[Token]
	return t, c.do(ctx, http.MethodPost, "/users/me/tokens", nil, in, &t)
}

// RevokeToken revokes one of the caller's API tokens by id.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, pathOf("users", "me", "tokens", id), nil, nil, nil)
}

// EdgeNodes lists the registered edge nodes.
func (c *Client) EdgeNodes(ctx context.Context) ([]Item[EdgeNode], error) {
	var l struct {
		EdgeNodes []Item[EdgeNode] `json:"edge_nodes"`
	}
	return l.EdgeNodes, c.do(ctx, http.MethodGet, "/edge-nodes", nil, nil, &l)
}

// EdgeNode is one edge node by id.
func (c *Client) EdgeNode(ctx context.Context, id string) (Item[EdgeNode], error) {
	var e Item[EdgeNode]
	return e, c.do(ctx, http.MethodGet, pathOf("edge-nodes", id), nil, nil, &e)
}

// CreateEdgeNode registers an edge node; the answer carries its
// credential, this once.
func (c *Client) CreateEdgeNode(ctx context.Context, in NewEdgeNode) (Item[EdgeNode], error) {
	var e Item[EdgeNode]
	return e, c.do(ctx, http.MethodPost, "/edge-nodes", nil, in, &e)
}

// DeleteEdgeNode deregisters an edge node by id.
func (c *Client) DeleteEdgeNode(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, pathOf("edge-nodes", id), nil, nil, nil)
}

// AssignRepositories gives an edge node repositories (ids or names).
func (c *Client) AssignRepositories(ctx context.Context, id string, repos []string) (Item[EdgeNode], error) {
	var e Item[EdgeNode]
	return e, c.do(ctx, http.MethodPost, pathOf("edge-nodes", id, "repositories"), nil, map[string][]string{"repository_ids": repos}, &e)
}

// UnassignRepository takes a repository (id or name) from an edge node.
func (c *Client) UnassignRepository(ctx context.Context, id, repo string) (Item[EdgeNode], error) {
	var e Item[EdgeNode]
	return e, c.do(ctx, http.MethodDelete, pathOf("edge-nodes", id, "repositories", repo), nil, nil, &e)
}

// Webhooks lists the webhooks.
func (c *Client) Webhooks(ctx context.Context) ([]Item[Webhook], error) {
	var l struct {
		Webhooks []Item[Webhook] `json:"webhooks"`
	}
	return l.Webhooks, c.do(ctx, http.MethodGet, "/webhooks", nil, nil, &l)
}

// CreateWebhook creates a webhook; the answer carries its secret, this
// once.
func (c *Client) CreateWebhook(ctx context.Context, in NewWebhook) (Item[Webhook], error) {
	var h Item[Webhook]
	return h, c.do(ctx, http.MethodPost, "/webhooks", nil, in, &h)
}

// DeleteWebhook deletes a webhook by id.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, pathOf("webhooks", id), nil, nil, nil)
}

// Plugins lists the plugins.
func (c *Client) Plugins(ctx context.Context) ([]Item[Plugin], error) {
	var l struct {
		Plugins []Item[Plugin] `json:"plugins"`
	}
	return l.Plugins, c.do(ctx, http.MethodGet, "/plugins", nil, nil, &l)
}

// InstallPlugin installs (or upgrades) a plugin from its WebAssembly
// module.
func (c *Client) InstallPlugin(ctx context.Context, module io.Reader) (Item[Plugin], error) {
	var p Item[Plugin]
	return p, c.do(ctx, http.MethodPost, "/plugins", nil, rawBody{module, "application/wasm"}, &p)
}

// SetPlugin enables or disables a plugin.
func (c *Client) SetPlugin(ctx context.Context, id string, enabled bool) (Item[Plugin], error) {
	var p Item[Plugin]
	action := "disable"
	if enabled {
		action = "enable"
	}
	return p, c.do(ctx, http.MethodPost, pathOf("plugins", id, action), nil, nil, &p)
}

// UninstallPlugin uninstalls an installed plugin.
func (c *Client) UninstallPlugin(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, pathOf("plugins", id), nil, nil, nil)
}
