package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/service/audit"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/ratelimit"
	"github.com/depot-registry/depot/shared/search"
)

// Prefix is where the API is mounted.
const Prefix = "/api/v1"

// Config of the API.
// The rate limits are run-time settings (app.Settings: rate_limit.*).
type Config struct {
	DemoMode bool
	// CORSOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the API from another site; "*" allows any.
	CORSOrigins []string
}

// Health reports on the node: why it is degraded (stable reason codes,
// none when healthy; shown to anyone, with a 503), what an operator
// should know of while it serves (warnings, stable codes too, shown to
// anyone with a 200), and details for signed-in callers.
type Health func() (reasons, warnings []string, details map[string]any)

// Deps are the API's collaborators: the application layer it is a
// transport for, and what a transport does itself (who is calling, the
// audit log, the node's health).
type Deps struct {
	App    *app.App // its Authn says who is calling
	Audit  *audit.Log
	Log    *slog.Logger
	Health Health
	// BrowserSignIn finishes a single sign-on the web UI began (the flow's
	// next page set): it keeps the session and sends the browser on, or
	// shows why it failed (nil: no web UI).
	BrowserSignIn func(w http.ResponseWriter, r *http.Request, pair *app.TokenPair, next string, err error)
}

// Server is the REST API handler.
type Server struct {
	cfg        Config
	mux        *http.ServeMux
	apiLimit   *ratelimit.Limiter
	nodeLimit  *ratelimit.Limiter // edge nodes' own requests (see NodeRateFactor)
	loginLimit *ratelimit.Limiter
	// limits are the rate-limit settings the limiters have (followLimits).
	limits atomic.Pointer[limits]
	// draining ends when the server shuts down, so long polls answer at
	// once instead of holding the shutdown up.
	draining context.Context
	drain    context.CancelFunc
	// app is the application layer the handlers call: they decode, call
	// and encode.
	app      *app.App
	auditLog *audit.Log
	log      *slog.Logger
	healthOf Health

	browserSignIn func(w http.ResponseWriter, r *http.Request, pair *app.TokenPair, next string, err error)

	table   []route // every route, documented
	openapi []byte  // the document made from table
}

// limits are the rate-limit settings.
type limits struct {
	api, login int
	window     time.Duration
}

// followLimits gives the limiters (the API's, and the credential
// guard's per username) the rate-limit settings in effect, when they
// changed: a PUT /admin/settings applies at the next request.
func (s *Server) followLimits() {
	v := s.app.Settings()
	now := limits{api: int(v.RateLimitAPI), login: int(v.RateLimitLogin), window: v.RateWindow()}
	if was := s.limits.Load(); was != nil && *was == now {
		return
	}
	s.apiLimit.SetLimit(now.api, now.window)
	s.nodeLimit.SetLimit(now.api*NodeRateFactor, now.window)
	s.loginLimit.SetLimit(now.login, now.window)
	if g := s.app.Authn.Guard; g != nil {
		g.SetLimits(now.login, now.window)
	}
	s.limits.Store(&now)
}

// Drain ends the long polls in progress and those to come (they answer
// what they have): the process is shutting down.
func (s *Server) Drain() { s.drain() }

// New builds the API.
func New(cfg Config, d Deps) *Server {
	now := d.App.Now
	s := &Server{
		cfg:           cfg,
		app:           d.App,
		auditLog:      d.Audit,
		log:           d.Log,
		healthOf:      d.Health,
		browserSignIn: d.BrowserSignIn,
		mux:           http.NewServeMux(),
		apiLimit:      ratelimit.New(0, time.Minute, now),
		nodeLimit:     ratelimit.New(0, time.Minute, now),
		loginLimit:    ratelimit.New(0, time.Minute, now),
	}
	s.followLimits()
	s.draining, s.drain = context.WithCancel(context.Background())
	s.routes()
	doc, err := s.openAPIDoc()
	if err != nil {
		panic(fmt.Sprintf("api: the OpenAPI document: %v", err)) // a type that cannot be described: a programming error
	}
	s.openapi = doc
	return s
}

// openAPI answers the document (openapi.go).
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ *auth.Principal) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(s.openapi)
	return err
}

// OpenAPI is the document of the API (served at /api/v1/openapi.json).
func (s *Server) OpenAPI() []byte { return s.openapi }

func (s *Server) now() time.Time { return s.app.Now() }

// access says who may reach a route before its handler decides the rest.
type access int

const (
	authenticated access = iota // any signed-in user who changed the initial password
	anyone                      // anonymous too (public repositories), but not a user who must change the password
	open                        // anyone at all: login and refresh
	selfService                 // signed in, allowed while a password change is pending
	adminOnly                   // global admin
	edgeNode                    // an edge node's credential (node-to-origin traffic, not audited)

	// ownAccount, added to a kind, also wants a credential that may
	// manage its account (a session or password, not a token narrowed to
	// repositories): profile and API tokens.
	ownAccount access = 1 << 8
)

type handler func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error

func (s *Server) handle(pattern string, a access, h handler, o op) {
	method, path, _ := strings.Cut(pattern, " ")
	s.mux.Handle(method+" "+Prefix+path, s.wrap(a, h))
	s.table = append(s.table, route{method: method, path: path, access: a, op: o})
}

// The tags of the document, in the spec's words.
const (
	tagAuth       = "Authentication"
	tagUsers      = "Users and API tokens"
	tagGroups     = "Groups and permissions"
	tagRepos      = "Repositories and artifacts"
	tagWebhooks   = "Events and webhooks"
	tagAdmin      = "Administration"
	tagEdges      = "Edge nodes"
	tagSearch     = "Search"
	tagNodes      = "Edge node protocol"
	tagSecurity   = "Security"
	tagMigrations = "Migrations"
	tagSigning    = "Signing"
	tagPlugins    = "Plugins"
)

var (
	pageParams = []param{{"page", "integer", "1-based page"}, {"limit", "integer", "items per page (at most 100)"}}
	repoParam  = param{"repository_id", "string", "a repository, by id or name"}
)

// routes is the API: every route with its documentation (openapi.go).
func (s *Server) routes() {
	s.handle("POST /auth/login", open, s.login, op{Tag: tagAuth, Summary: "Sign in with a username and a password: a login session's access and refresh tokens",
		In: loginRequest{}, Out: app.TokenPair{}})
	s.handle("POST /auth/refresh", open, s.refresh, op{Tag: tagAuth, Summary: "A new access token for the session of a refresh token",
		In: refreshRequest{}, Out: app.TokenPair{}})
	s.handle("POST /auth/logout", selfService, s.logout, op{Tag: tagAuth, Summary: "End the caller's login session (its tokens stop at every node)", Status: http.StatusNoContent})
	s.handle("GET /auth/oidc/login", open, s.oidcLogin, op{Tag: tagAuth, Summary: "Begin a single sign-on: a redirect to the OpenID provider (state, nonce and PKCE in a cookie)",
		Status: http.StatusFound})
	s.handle("GET /auth/oidc/callback", open, s.oidcCallback, op{Tag: tagAuth, Summary: "The provider's redirect back: the login session's tokens (or, begun on the web UI, its page)",
		Out: app.TokenPair{}, Query: []param{{"code", "string", "the provider's code"}, {"state", "string", "the flow's state"}}})
	s.handle("GET /health", anyone, s.health, op{Tag: tagAdmin, Summary: "Whether this node serves (503 degraded with reasons); a signed-in caller also gets its details",
		Out: healthAnswer{}, Also: map[int]any{http.StatusServiceUnavailable: healthAnswer{}}})
	s.handle("GET /openapi.json", open, s.openAPI, op{Tag: tagAdmin, Summary: "This document", Out: map[string]any{}})

	s.handle("GET /users", adminOnly, s.listUsers, op{Tag: tagUsers, Summary: "List users", Out: userList{}})
	s.handle("POST /users", adminOnly, s.createUser, op{Tag: tagUsers, Summary: "Create a local user (who changes the initial password at first sign-in)",
		In: newUserRequest{}, Out: userView{}, Status: http.StatusCreated})
	s.handle("GET /users/me", selfService, s.getMe, op{Tag: tagUsers, Summary: "The caller's profile", Out: userView{}})
	s.handle("PUT /users/me", selfService|ownAccount, s.updateMe, op{Tag: tagUsers, Summary: "Change the caller's email, display name or password (with the current one)",
		In: accountRequest{}, Out: userView{}})
	s.handle("PUT /users/{id}", adminOnly, s.updateUser, op{Tag: tagUsers, Summary: "Disable a user (sessions end, API tokens revoked, at every node) or enable one again",
		In: userChangeRequest{}, Out: userView{}})
	s.handle("DELETE /users/{id}", adminOnly, s.deleteUser, op{Tag: tagUsers, Summary: "Delete a user", Status: http.StatusNoContent})
	s.handle("POST /users/me/tokens", authenticated|ownAccount, s.createToken, op{Tag: tagUsers, Summary: "Create an API token: its secret is in this answer only",
		In: newTokenRequest{}, Out: tokenCreated{}, Status: http.StatusCreated})
	s.handle("GET /users/me/tokens", authenticated|ownAccount, s.listTokens, op{Tag: tagUsers, Summary: "List the caller's API tokens", Out: tokenList{}})
	// A token may revoke itself (the use case checks the account rule).
	s.handle("DELETE /users/me/tokens/{id}", authenticated, s.revokeToken, op{Tag: tagUsers, Summary: "Revoke one of the caller's API tokens (any token may revoke itself)",
		Status: http.StatusNoContent})

	s.handle("GET /groups", authenticated, s.listGroups, op{Tag: tagGroups, Summary: "List groups", Out: groupList{}})
	s.handle("POST /groups", adminOnly, s.createGroup, op{Tag: tagGroups, Summary: "Create a group", In: newGroupRequest{}, Out: meta.Group{}, Status: http.StatusCreated})
	s.handle("POST /groups/{id}/members", adminOnly, s.addGroupMembers, op{Tag: tagGroups, Summary: "Add users (by id or name) to a group",
		In: groupMembersRequest{}, Out: meta.Group{}})
	s.handle("DELETE /groups/{id}/members/{user}", adminOnly, s.removeGroupMember, op{Tag: tagGroups,
		Summary: "Take a user (by id or name) out of a group (a directory's membership comes back with its next word)", Out: meta.Group{}})

	s.handle("GET /permissions", authenticated, s.listPermissions, op{Tag: tagGroups, Summary: "List the grants the caller may see",
		Out: permissionList{}, Query: []param{repoParam}})
	s.handle("POST /permissions", authenticated, s.createPermission, op{Tag: tagGroups, Summary: "Grant a user or a group actions on a repository (its administrators may)",
		In: newPermissionRequest{}, Out: meta.Permission{}, Status: http.StatusCreated})
	s.handle("DELETE /permissions/{id}", authenticated, s.deletePermission, op{Tag: tagGroups, Summary: "Revoke a grant", Status: http.StatusNoContent})

	s.handle("GET /repositories", anyone, s.listRepos, op{Tag: tagRepos, Summary: "List the repositories the caller may read, in name order",
		Out: repoList{}, Query: append([]param{{"format", "string", "only this format"}}, pageParams...)})
	s.handle("POST /repositories", authenticated, s.createRepo, op{Tag: tagRepos, Summary: "Create a repository", In: newRepoRequest{}, Out: repoView{}, Status: http.StatusCreated})
	s.handle("GET /repositories/{id}", anyone, s.getRepo, op{Tag: tagRepos, Summary: "A repository, by id or name", Out: repoView{}})
	s.handle("PUT /repositories/{id}", authenticated, s.updateRepo, op{Tag: tagRepos, Summary: "Change a repository's description, visibility or settings",
		In: repoChangeRequest{}, Out: repoView{}})
	s.handle("DELETE /repositories/{id}", authenticated, s.deleteRepo, op{Tag: tagRepos, Summary: "Delete a repository with everything in it", Status: http.StatusNoContent})

	s.handle("GET /artifacts/{id}", anyone, s.getArtifact, op{Tag: tagRepos, Summary: "An artifact's record", Out: format.ArtifactView{}})
	s.handle("GET /artifacts/{id}/download", anyone, s.downloadArtifact, op{Tag: tagRepos, Summary: "An artifact's bytes (Range requests honoured)",
		Raw: true})
	s.handle("GET /artifacts/{id}/properties", anyone, s.getProperties, op{Tag: tagRepos, Summary: "An artifact's properties (key to values), as Artifactory keeps them", Out: propertiesView{}})
	s.handle("PUT /artifacts/{id}/properties", authenticated, s.setProperties, op{Tag: tagRepos,
		Summary: "Set an artifact's properties, replacing all it had (write permission; at most 128 keys, 100 values of 2,400 bytes each)", In: propertiesRequest{}, Out: propertiesView{}})
	s.handle("PATCH /artifacts/{id}/properties", authenticated, s.setProperties, op{Tag: tagRepos,
		Summary: "Change the properties named: a key's values replaced, or the key removed when null (write permission)", In: propertiesRequest{}, Out: propertiesView{}})
	s.handle("DELETE /artifacts/{id}", authenticated, s.deleteArtifact, op{Tag: tagRepos, Summary: "Delete an artifact, as its format deletes it", Status: http.StatusNoContent})

	s.handle("GET /packages", anyone, s.listPackages, op{Tag: tagRepos, Summary: "List packages of the repositories the caller may read",
		Out: packageList{}, Query: append([]param{{"query", "string", "names containing it"}, {"format", "string", "only this format"}, repoParam}, pageParams...)})
	s.handle("GET /search/quick", anyone, s.search("quick"), op{Tag: tagSearch, Summary: "Packages, versions and files the caller may read, found by name, file name or what packages say of themselves; best first (scores in the README)",
		Out: search.QuickAnswer{}, Query: []param{{"q", "string", "the text to search for (required, at most 256 bytes)"}, {"limit", "integer", "results, 1 to 100 (default 10)"}}})
	s.handle("GET /search/advanced", anyone, s.search("advanced"), op{Tag: tagSearch, Summary: "Versions the caller may read, by text, format, repository and upload date; paginated",
		Out: search.AdvancedAnswer{}, Query: append([]param{{"query", "string", "text matched as a quick search matches packages"}, {"format", "string", "only this format"},
			{"repository", "string", "only this repository, by name or id"}, {"min_date", "string", "uploaded at or after: an ISO date or an RFC 3339 time"},
			{"max_date", "string", "uploaded before: an RFC 3339 time, or an ISO date (that day included)"}}, pageParams...)})
	s.handle("GET /search/checksum", anyone, s.search("checksum"), op{Tag: tagSearch, Summary: "The artifacts the caller may read whose MD5, SHA-1 or SHA-256 (by its length) is checksum, exactly",
		Out: search.ChecksumAnswer{}, Query: []param{{"checksum", "string", "hexadecimal: 32 (MD5), 40 (SHA-1) or 64 (SHA-256) digits"}}})
	s.handle("GET /search/suggest", anyone, s.search("suggest"), op{Tag: tagSearch, Summary: "Completions of a partial query: package names, then terms packages are found by",
		Out: search.SuggestAnswer{}, Query: []param{{"q", "string", "the partial query (required)"}, {"limit", "integer", "suggestions, 1 to 100 (default 10)"}}})
	s.handle("GET /packages/{name}/versions", anyone, s.listVersions, op{Tag: tagRepos, Summary: "List a package's versions", Out: versionList{},
		Query: []param{repoParam}})

	s.handle("GET /webhooks", adminOnly, s.listWebhooks, op{Tag: tagWebhooks, Summary: "List webhooks", Out: webhookList{}})
	s.handle("POST /webhooks", adminOnly, s.createWebhook, op{Tag: tagWebhooks, Summary: "Create a webhook (its secret is in this answer only)",
		In: webhookRequest{}, Out: webhookView{}, Status: http.StatusCreated})
	s.handle("GET /webhooks/{id}", adminOnly, s.getWebhook, op{Tag: tagWebhooks, Summary: "A webhook with its delivery figures", Out: webhookView{}})
	s.handle("PUT /webhooks/{id}", adminOnly, s.updateWebhook, op{Tag: tagWebhooks, Summary: "Change the fields given of a webhook", In: webhookRequest{}, Out: webhookView{}})
	s.handle("DELETE /webhooks/{id}", adminOnly, s.deleteWebhook, op{Tag: tagWebhooks, Summary: "Delete a webhook", Status: http.StatusNoContent})
	s.handle("POST /webhooks/{id}/test", adminOnly, s.testWebhook, op{Tag: tagWebhooks, Summary: "Send webhook.test: the delivery once attempted (202 while it waits)",
		Out: deliveryView{}, Also: map[int]any{http.StatusAccepted: deliveryView{}}})
	s.handle("GET /webhooks/{id}/deliveries", adminOnly, s.listDeliveries, op{Tag: tagWebhooks, Summary: "A webhook's deliveries, newest first",
		Out: deliveryList{}, Query: pageParams})
	s.handle("GET /webhooks/{id}/deliveries/{delivery}", adminOnly, s.getDelivery, op{Tag: tagWebhooks, Summary: "A delivery with its request body", Out: deliveryView{}})
	s.handle("POST /webhooks/{id}/deliveries/{delivery}/redeliver", adminOnly, s.redeliver, op{Tag: tagWebhooks, Summary: "Attempt a delivery once more (202 while it waits)",
		Out: deliveryView{}, Also: map[int]any{http.StatusAccepted: deliveryView{}}})
	s.handle("GET /events", authenticated, s.listEvents, op{Tag: tagWebhooks, Summary: "The event log after a cursor, filtered by what the caller may read (long poll with wait)",
		Out: eventPage{}, Query: []param{{"since", "string", `a cursor (next_cursor of an answer), or "latest"`}, {"types", "string", "comma-separated event names"},
			repoParam, {"limit", "integer", "at most 1000"}, {"wait", "integer", "seconds to wait for an event when there is none"}}})
	s.handle("POST /security/scans", authenticated, s.requestScan, op{Tag: tagSecurity, Summary: "Queue a scan of an artifact (write access): the scan, queued (or the one queued already)",
		In: scanRequest{}, Out: meta.Scan{}, Status: http.StatusAccepted})
	s.handle("GET /security/scans", authenticated, s.listScans, op{Tag: tagSecurity, Summary: "Scans of the artifacts the caller may read, newest first",
		Out: scanList{}, Query: append([]param{{"artifact_id", "string", "only this artifact's"}, repoParam,
			{"status", "string", "queued, running, completed or failed"}}, pageParams...)})
	s.handle("GET /security/scans/{id}", authenticated, s.getScan, op{Tag: tagSecurity, Summary: "A scan and its report: findings, packages matched, what was not scanned and why",
		Out: scanDetail{}})
	s.handle("POST /security/advisories", adminOnly, s.loadAdvisories, op{Tag: tagSecurity,
		Summary: "Load OSV advisories (body: a zip of OSV JSON files, one record, or a JSON array of them): merged into the database every origin uses",
		Out:     advisoriesLoaded{}, Query: []param{{"filename", "string", "the uploaded file's name, kept in the database's loads"}}})
	s.handle("GET /security/advisories", authenticated, s.advisories, op{Tag: tagSecurity, Summary: "The advisory database in force: its advisories by ecosystem and its last loads",
		Out: advisoryStatus{}})
	s.handle("POST /security/osv/v1/query", authenticated, s.queryOSV, op{Tag: tagSecurity,
		Summary: "OSV's query API over the advisory database (a package by name and ecosystem at a version): the records affecting it; for tools that query OSV at an address they are given (pip-audit --osv-url)",
		In:      app.OSVQuery{}, Out: app.OSVVulns{}})
	s.handle("POST /security/osv/v1/querybatch", authenticated, s.queryOSVBatch, op{Tag: tagSecurity,
		Summary: "OSV's batch query API: for each query (at most 1,000), the ids and modification times of the records affecting it",
		In:      app.OSVBatch{}, Out: app.OSVBatchResults{}})
	s.handle("GET /security/policies", authenticated, s.listPolicies, op{Tag: tagSecurity, Summary: "The security policies, by name", Out: policyList{}})
	s.handle("POST /security/policies", adminOnly, s.createPolicy, op{Tag: tagSecurity,
		Summary: "Create a security policy: name, enabled, scope (repositories, formats), rules (severity_threshold, block_upload, block_download, block_unscanned, require_signature, signing_keys, allowlist)",
		In:      app.PolicyInput{}, Out: meta.Policy{}, Status: http.StatusCreated})
	s.handle("GET /security/policies/{id}", authenticated, s.getPolicy, op{Tag: tagSecurity, Summary: "A security policy", Out: meta.Policy{}})
	s.handle("PUT /security/policies/{id}", adminOnly, s.updatePolicy, op{Tag: tagSecurity, Summary: "Change the fields given of a policy (scope and rules are replaced whole)",
		In: app.PolicyInput{}, Out: meta.Policy{}})
	s.handle("DELETE /security/policies/{id}", adminOnly, s.deletePolicy, op{Tag: tagSecurity, Summary: "Delete a security policy", Status: http.StatusNoContent})
	s.handle("GET /admin/stats", adminOnly, s.stats, op{Tag: tagAdmin, Summary: "Statistics: repositories, artifacts, users, storage, downloads", Out: app.Stats{}})
	s.handle("POST /admin/cleanup", adminOnly, s.cleanup, op{Tag: tagAdmin, Summary: "Apply the retention rules, then run a garbage collection: what they removed",
		Out: app.CleanupResult{}, Query: []param{{"dry_run", "boolean", "true: only report what the retention rules would delete (no garbage collection)"}}})
	s.handle("GET /admin/settings", adminOnly, s.getSettings, op{Tag: tagAdmin, Summary: "The run-time settings: each one's value, default, bounds and source (default, settings, or the flag or variable fixing it on this origin)",
		Out: app.SettingsView{}})
	s.handle("PUT /admin/settings", adminOnly, s.putSettings, op{Tag: tagAdmin, Summary: "Change settings by key (null: back to the default), at once, on every node; refused for a setting this origin's flag fixes",
		In: settingsChange{}, Out: app.SettingsView{}})
	s.handle("POST /migrations", adminOnly, s.createMigration, op{Tag: tagMigrations,
		Summary: "Make a migration from an Artifactory (shape A: source_url, source_username, source_password; shape B: source {type, url, username, password}, options), pending until started; the source is checked first (reachable, credentials, every repository named)",
		In:      app.MigrationInput{}, Out: meta.Migration{}, Status: http.StatusCreated})
	s.handle("GET /migrations", adminOnly, s.listMigrations, op{Tag: tagMigrations, Summary: "The migrations, newest first", Out: migrationList{}})
	s.handle("GET /migrations/{id}", adminOnly, s.getMigration, op{Tag: tagMigrations, Summary: "A migration with its progress and estimated completion", Out: meta.Migration{}})
	s.handle("POST /migrations/{id}/start", adminOnly, s.moveMigration("start"), op{Tag: tagMigrations, Summary: "Start a pending migration (the cluster's leader runs it)", Out: meta.Migration{}})
	s.handle("POST /migrations/{id}/resume", adminOnly, s.moveMigration("resume"), op{Tag: tagMigrations,
		Summary: "Resume an interrupted migration: the source is listed again and what is already here is skipped", Out: meta.Migration{}})
	s.handle("POST /migrations/{id}/cancel", adminOnly, s.moveMigration("cancel"), op{Tag: tagMigrations, Summary: "Cancel a migration not finished (what it moved stays)", Out: meta.Migration{}})
	s.handle("GET /migrations/{id}/logs", adminOnly, s.migrationLog("log"), op{Tag: tagMigrations, Summary: "A migration's log lines, oldest first",
		Out: migrationEntries{}, Query: []param{{"after", "integer", "only lines after this sequence number"}, {"limit", "integer", "at most this many (1,000)"}}})
	s.handle("GET /migrations/{id}/failures", adminOnly, s.migrationLog("failure"), op{Tag: tagMigrations, Summary: "The files a migration could not move, with why",
		Out: migrationEntries{}, Query: []param{{"after", "integer", "only failures after this sequence number"}, {"limit", "integer", "at most this many (1,000)"}}})
	s.handle("GET /migrations/{id}/report", adminOnly, s.migrationReport, op{Tag: tagMigrations,
		Summary: "A migration's report: totals, checksum verification, failures, metadata and permission migration", Out: app.MigrationReport{}})
	s.handle("GET /plugins", adminOnly, s.listPlugins, op{Tag: tagPlugins, Summary: "The plugins: every format handler, with whether it is enabled", Out: pluginList{}})
	s.handle("POST /plugins", adminOnly, s.installPlugin, op{Tag: tagPlugins, InType: "application/wasm", Status: http.StatusCreated, Out: app.Plugin{},
		Summary: "Install a format handler compiled to WebAssembly (the module is the body); one whose id is installed is upgraded"})
	s.handle("POST /plugins/{id}/enable", adminOnly, s.setPlugin(true), op{Tag: tagPlugins, Summary: "Enable a plugin: its client paths answer again, at origins and edges", Out: app.Plugin{}})
	s.handle("POST /plugins/{id}/disable", adminOnly, s.setPlugin(false), op{Tag: tagPlugins,
		Summary: "Disable a plugin: its client paths answer 404 saying so, at origins and edges; nothing it stores is touched", Out: app.Plugin{}})
	s.handle("DELETE /plugins/{id}", adminOnly, s.deletePlugin, op{Tag: tagPlugins, Summary: "Uninstall a plugin (a built-in format handler is disabled instead: 409)", Status: http.StatusNoContent})
	s.handle("GET /signing/keys", anyone, s.listSigningKeys, op{Tag: tagSigning, Summary: "The signing keys, oldest first: their public parts (anyone may read them, to check signatures)", Out: keyList{}})
	s.handle("POST /signing/keys", adminOnly, s.createSigningKey, op{Tag: tagSigning,
		Summary: "Make a key pair (algorithm ed25519, the default; ecdsa-p256, rsa-4096, or openpgp for .asc signatures); its private key never leaves the origins, sealed with DEPOT_SIGNING_KEK",
		In:      app.NewSigningKey{}, Out: meta.SigningKey{}, Status: http.StatusCreated})
	s.handle("GET /signing/keys/{id}", anyone, s.getSigningKey, op{Tag: tagSigning, Summary: "A signing key's public record", Out: meta.SigningKey{}})
	s.handle("GET /signing/keys/{id}/public", anyone, s.publicKey, op{Tag: tagSigning, Summary: "A key's public part as a file: PEM, or an armored OpenPGP key", Raw: true})
	s.handle("POST /signing/keys/{id}/retire", adminOnly, s.retireSigningKey, op{Tag: tagSigning,
		Summary: "Retire a key: it signs no more, and its signatures verify until it is deleted (rotation: make the successor, retire this one)", Out: meta.SigningKey{}})
	s.handle("DELETE /signing/keys/{id}", adminOnly, s.deleteSigningKey, op{Tag: tagSigning, Summary: "Delete a key and its private part: its signatures no longer verify", Status: http.StatusNoContent})
	s.handle("POST /signing/sign", authenticated, s.sign, op{Tag: tagSigning,
		Summary: "Sign an artifact (write permission on its repository) with an active key: its SHA-256, or its bytes with an OpenPGP key; replaces the key's earlier signature",
		In:      signRequest{}, Out: app.SignatureView{}, Status: http.StatusCreated})
	s.handle("GET /signing/verify/{id}", anyone, s.verify, op{Tag: tagSigning, Summary: "Whether an artifact's signatures verify its current bytes, each with its key, algorithm, signer and time",
		Out: app.Verification{}})
	s.handle("GET /admin/backups", adminOnly, s.listBackups, op{Tag: tagAdmin, Summary: "List backups, newest first, with their status and progress", Out: backupList{}})
	s.handle("POST /admin/backups", adminOnly, s.createBackup, op{Tag: tagAdmin, Summary: "Start a backup in the background: the metadata, and every blob when include_artifacts",
		In: backupRequest{}, Out: meta.Backup{}, Status: http.StatusAccepted})
	s.handle("GET /admin/backups/{id}", adminOnly, s.getBackup, op{Tag: tagAdmin, Summary: "A backup", Out: meta.Backup{}})
	s.handle("GET /admin/backups/{id}/download", adminOnly, s.downloadBackup, op{Tag: tagAdmin, Summary: "A completed backup's archive (zstd-compressed tar; Range requests honoured)", Raw: true})
	s.handle("DELETE /admin/backups/{id}", adminOnly, s.deleteBackup, op{Tag: tagAdmin, Summary: "Delete a backup (its archive goes with the next garbage collection)", Status: http.StatusNoContent})
	s.handle("POST /admin/backups/{id}/restore", adminOnly, s.restoreBackup, op{Tag: tagAdmin, Summary: "Restore a backup into the running cluster, in the background (GET /admin/restore follows it)",
		In: restoreRequest{}, Out: meta.RestoreState{}, Status: http.StatusAccepted})
	s.handle("GET /admin/restore", adminOnly, s.restoreState, op{Tag: tagAdmin, Summary: "The restore in progress or last finished", Out: restoreStatus{}})
	s.handle("GET /admin/reindex", adminOnly, s.reindexState, op{Tag: tagAdmin, Summary: "The search index: the reindex running or last finished, and how far the indexer has read",
		Out: app.ReindexStatus{}})
	s.handle("POST /admin/reindex", adminOnly, s.startReindex, op{Tag: tagAdmin, Summary: "Read every artifact again for search, in the background (one at a time in the cluster; searches keep answering)",
		Out: app.ReindexStatus{}, Status: http.StatusAccepted})
	s.handle("GET /admin/cluster", adminOnly, s.clusterView, op{Tag: tagAdmin, Summary: "The origin cluster: members, roles, health, sync", Out: app.ClusterView{}})
	s.handle("DELETE /admin/cluster/members/{id}", adminOnly, s.removeClusterMember, op{Tag: tagAdmin, Summary: "Remove a dead origin from the cluster", Status: http.StatusNoContent})
	s.handle("GET /admin/directory", adminOnly, s.directoryStatus, op{Tag: tagAdmin, Summary: "The directory (LDAP) and single sign-on settings and the last syncs",
		Out: app.DirectoryStatus{}})

	s.handle("GET /edge-nodes", adminOnly, s.listEdges, op{Tag: tagEdges, Summary: "List edge nodes with their status", Out: edgeList{}})
	s.handle("POST /edge-nodes", adminOnly, s.createEdge, op{Tag: tagEdges, Summary: "Register an edge node: its credential is in this answer only",
		In: newEdgeRequest{}, Out: edgeCreated{}, Status: http.StatusCreated})
	s.handle("GET /edge-nodes/{id}", adminOnly, s.getEdge, op{Tag: tagEdges, Summary: "An edge node", Out: app.EdgeNode{}})
	s.handle("DELETE /edge-nodes/{id}", adminOnly, s.deleteEdge, op{Tag: tagEdges, Summary: "Deregister an edge node (its credential stops at once)", Status: http.StatusNoContent})
	s.handle("POST /edge-nodes/{id}/repositories", adminOnly, s.assignEdge, op{Tag: tagEdges, Summary: "Assign repositories to an edge node",
		In: assignRequest{}, Out: app.EdgeNode{}})
	s.handle("DELETE /edge-nodes/{id}/repositories/{repo}", adminOnly, s.unassignEdge, op{Tag: tagEdges, Summary: "Unassign a repository from an edge node", Out: app.EdgeNode{}})
	s.handle("POST /edge-nodes/{id}/heartbeat", edgeNode, s.edgeHeartbeat, op{Tag: tagNodes, Summary: "A node's report; the answer is its assignment",
		In: protocol.Report{}, Out: protocol.Assignment{}})
	s.handle("POST /edge-nodes/{id}/events", edgeNode, s.edgeEvents, op{Tag: tagNodes, Summary: "Events a node saw (downloads)", In: protocol.Events{}, Out: protocol.EventsAnswer{}})
	s.handle("GET /edge-nodes/{id}/feed", edgeNode, s.edgeFeed, op{Tag: tagNodes, Summary: "A page of the node's change feed (long poll with wait)", Out: protocol.Page{},
		Query: []param{{"since", "integer", "log index"}, repoParam, {"principals", "string", "comma-separated"}, {"global", "string", "1: users and groups only"},
			{"kinds", "string", "comma-separated record kinds"}, {"limit", "integer", ""}, {"wait", "integer", "seconds"}}})
	s.handle("POST /edge-nodes/{id}/vouch", edgeNode, s.edgeVouch, op{Tag: tagNodes, Summary: "Vouch for a token the node cannot verify", In: protocol.VouchRequest{}, Out: protocol.Vouch{}})
	s.handle("POST /edge-nodes/{id}/password", edgeNode, s.edgePassword, op{Tag: tagNodes, Summary: "Check a password for the node", In: protocol.PasswordCheck{}, Out: protocol.PasswordVerdict{}})
	s.handle("GET /edge-nodes/{id}/blobs/{digest}", edgeNode, s.edgeBlob, op{Tag: tagNodes, Summary: "A blob of the node's repositories (Range requests honoured)",
		Raw: true})
}

// unrouted answers a request no route matched: 405 with Allow when the
// path exists under other methods, else 404, both in the API's error shape.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		apierr.Write(w, apierr.New(apierr.NotFound, "no API endpoint %s %s", r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}

// NodeRateFactor is how many times the API rate limit an edge node's own
// requests (its feed, heartbeats, blob fetches, catch-ups after the
// writes it forwards for many clients) may make: a node serves many
// users, each of whom has the API limit of their own.
const NodeRateFactor = 20

// ServeHTTP applies the API-wide rules, then routes: cross-site writes are
// refused, the caller is authenticated once, and the request rate is
// limited per user or token (per address for anonymous callers, so
// everyone behind one proxy does not share a bucket).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return
	}
	ip := httpx.ClientIP(r)
	p, authErr := s.app.Authn.Authenticate(r.Context(), r.Header.Get("Authorization"), ip)
	if authErr == nil && !p.AcceptedOn(Prefix) {
		// Registry tokens serve their format's paths only.
		p, authErr = nil, auth.ErrBadCredentials
	}
	s.followLimits()
	key, limit := "a:"+ip, s.apiLimit
	switch {
	case p.Edge() != "":
		key, limit = "e:"+p.Edge(), s.nodeLimit // a node's own bucket, not its address's
	case !p.Anonymous():
		key = "u:" + p.UserID + ":" + p.TokenID
	}
	d := limit.Allow(key)
	if d.Limit > 0 {
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(d.Reset.Unix(), 10))
	}
	if !d.Allowed {
		tooMany(w, d.Reset.Sub(s.now()))
		return
	}
	if s.cfg.DemoMode && isWrite(r.Method) && !demoExempt(r, p) {
		apierr.Write(w, errDemoMode())
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.unrouted(w, r)
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller{p, authErr})))
}

// caller is who ServeHTTP authenticated, handed to the route.
type caller struct {
	p   *auth.Principal
	err error
}

type callerKey struct{}

func tooMany(w http.ResponseWriter, retry time.Duration) {
	secs := ratelimit.Seconds(retry)
	apierr.Write(w, apierr.New(apierr.RateLimited, "too many requests; retry in %d seconds", secs).With(apierr.RetryAfter, secs))
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func demoExempt(r *http.Request, p *auth.Principal) bool {
	if p != nil && p.EdgeID != "" {
		// An edge node's own protocol (heartbeats, its download counts,
		// sign-in checks): the node serves the demo's reads; writes it
		// forwards carry their user and are refused as theirs.
		return true
	}
	switch strings.TrimPrefix(r.URL.Path, Prefix) {
	case "/auth/login", "/auth/refresh", "/auth/logout":
		return true
	case "/users/me":
		// Without the forced initial password change a fresh demo instance
		// is unusable; updateMe lets only the password through.
		return r.Method == http.MethodPut && !p.Anonymous() && p.MustChangePassword
	}
	return false
}

func errDemoMode() *apierr.Error {
	return apierr.New(apierr.DemoMode, "this is a demo instance: only reads are allowed")
}

// wrap authenticates, gates, runs h, renders its error and audits writes.
func (s *Server) wrap(a access, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &httpx.StatusWriter{ResponseWriter: w}
		c, _ := r.Context().Value(callerKey{}).(caller)
		p, err := c.p, c.err
		if err == nil {
			err = s.gate(a, p, r)
		}
		if isWrite(r.Method) && r.URL.Path != Prefix+"/auth/login" && a != edgeNode {
			// Deferred: a request aborted for a client gone is audited too.
			defer func() { s.AuditWrite(r, p, sw.Status) }()
		}
		if err == nil {
			r = r.WithContext(meta.WithActor(r.Context(), p.Actor(), s.now()))
			err = h(sw, r, p)
		}
		if err != nil {
			s.writeErr(sw, r, err)
		}
	})
}

func (s *Server) gate(a access, p *auth.Principal, r *http.Request) error {
	kind := a &^ ownAccount
	if kind == open || (kind == anyone && p.Anonymous()) {
		return nil
	}
	if kind == edgeNode {
		if p.Edge() == "" {
			return apierr.New(apierr.Unauthorized, "an edge node's credential is required")
		}
		if err := protocol.CheckVersion(r.Header); err != nil {
			return apierr.New(apierr.ValidationFailed, "%s", err.Error())
		}
		return nil
	}
	if p.Anonymous() {
		return apierr.New(apierr.Unauthorized, "authentication required")
	}
	if a&ownAccount != 0 && !p.ManagesAccount() {
		return apierr.New(apierr.Forbidden, "managing the account needs a login session or password (or an admin-scoped token); this API token acts on repositories only")
	}
	if kind != selfService && p.MustChangePassword {
		return apierr.New(apierr.PasswordChangeRequired,
			"the password of %s must be changed first: PUT %s/users/me with current_password and password", p.Username, Prefix)
	}
	if kind == adminOnly && !p.IsAdmin() {
		return apierr.New(apierr.Forbidden, "administrator access required")
	}
	return nil
}

// AuditWrite records one API write in the audit log.
func (s *Server) AuditWrite(r *http.Request, p *auth.Principal, status int) {
	// Routes are registered as "METHOD /path" patterns: the pattern names
	// the action; the catch-all has no method, so method and path do.
	action := r.Pattern
	if !strings.HasPrefix(action, r.Method+" ") {
		action = r.Method + " " + r.URL.Path
	}
	s.audit(p, action, r.URL.Path, httpx.ClientIP(r), httpx.RequestID(r.Context()), status)
}

// AuditFormatWrite records one write of a format path, so every write of
// the origin is audited the same way.
func (s *Server) AuditFormatWrite(r *format.Request, status int) {
	target := r.Prefix + r.Path
	s.audit(r.Principal, r.Method+" "+target, target, r.RemoteAddr, r.RequestID, status)
}

func (s *Server) audit(p *auth.Principal, action, target, remote, requestID string, status int) {
	outcome := "success"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		outcome = "denied"
	case status >= 400:
		outcome = "failure"
	}
	e := audit.Event{Time: s.now().UTC(), Actor: p.Name(), Action: action,
		Target: target, Remote: remote, Outcome: outcome, Status: status, RequestID: requestID}
	if !p.Anonymous() {
		e.ActorID = p.UserID
	}
	s.auditLog.Record(e)
}

// writeErr renders err; unknown errors are logged with the request id and
// answered without internals.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	if httpx.ClientGone(r, err) {
		httpx.Abort(w) // nobody to answer: a 499, not an error
	}
	e := apierr.As(err, format.Domain)
	if e != nil && e.Code == apierr.InsufficientStorage {
		s.log.Warn("api request refused: insufficient storage", "request_id", httpx.RequestID(r.Context()), "err", err)
	}
	if e == nil {
		id := httpx.RequestID(r.Context())
		s.log.Error("api request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		e = apierr.InternalError(id)
	}
	if e.Code == apierr.Unauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="Depot"`)
	}
	if e.Reason() != "" { // the message in the status line too, for tools that show only it
		if secs, ok := e.RetryAfterSeconds(); ok {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if httpx.WriteWithReason(w, r, e.Status(), format.ReasonPhrase(e.Reason()), apierr.Body(e)) {
			return
		}
	}
	apierr.Write(w, e) // with Retry-After when e says when to retry
}

// maxJSON bounds API request bodies.
const maxJSON = 1 << 20

// decode reads a JSON body into v. Unknown fields are ignored (clients
// written for other registries send extras); syntax errors are 400s.
func decode(r *http.Request, v any) error {
	if !isJSON(r) && r.ContentLength != 0 {
		return apierr.New(apierr.UnsupportedMediaType, "the request body must be JSON, sent with Content-Type: application/json")
	}
	return decodeBody(r, v)
}

// decodeQuery is decode for a query that changes nothing (a page of
// another site gains nothing from sending it): a body sent without a
// Content-Type is read as JSON too, as tools written for osv.dev send it.
func decodeQuery(r *http.Request, v any) error {
	if r.Header.Get("Content-Type") == "" {
		return decodeBody(r, v)
	}
	return decode(r, v)
}

func decodeBody(r *http.Request, v any) error {
	body := http.MaxBytesReader(nil, r.Body, maxJSON)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return apierr.New(apierr.PayloadTooLarge, "request body exceeds %d bytes", maxJSON)
		case errors.Is(err, format.ErrSlowBody):
			return apierr.New(apierr.RequestTimeout, "the request body did not arrive in time")
		case errors.Is(err, io.EOF):
			return apierr.New(apierr.BadRequest, "request body is empty; a JSON object is expected")
		case errors.As(err, &typ) && typ.Field == "":
			// The body itself is not an object; its Go type is no business
			// of the client.
			return apierr.New(apierr.BadRequest, "request body must be a JSON object, not %s", typ.Value)
		case errors.As(err, &typ):
			return apierr.Invalid(typ.Field, "%s must be of type %s", typ.Field, typ.Type)
		case errors.As(err, &syn):
			return apierr.New(apierr.BadRequest, "malformed JSON at byte %d", syn.Offset)
		}
		return apierr.New(apierr.BadRequest, "malformed JSON body")
	}
	if dec.More() {
		return apierr.New(apierr.BadRequest, "request body must be a single JSON object")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// written answers a write's result: its log index (X-Depot-Index) and v
// as JSON with status, or the error.
func written(w http.ResponseWriter, idx uint64, err error, status int, v any) error {
	if idx > 0 {
		format.SetIndex(w.Header(), idx)
	}
	if err != nil {
		return err
	}
	if v == nil {
		w.WriteHeader(status)
		return nil
	}
	return writeJSON(w, status, v)
}

// pageOf parses page and limit (1-based page, 1..100 items, default 20)
// as the application layer's Page.
func pageOf(r *http.Request) (app.Page, error) {
	pg := app.DefaultPage
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > app.MaxPageNumber {
			return pg, apierr.Invalid("page", "page must be an integer from 1 to %d", app.MaxPageNumber)
		}
		pg.Number = n
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > app.MaxPageLimit {
			return pg, apierr.Invalid("limit", "limit must be an integer from 1 to %d", app.MaxPageLimit)
		}
		pg.Limit = n
	}
	return pg, nil
}
