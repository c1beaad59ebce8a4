package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
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
)

// Prefix is where the API is mounted.
const Prefix = "/api/v1"

// Config of the API.
type Config struct {
	DemoMode       bool
	RateLimit      int // API requests per RateWindow per client; <= 0 disables
	RateLimitLogin int // login attempts per RateWindow per client and username
	RateWindow     time.Duration
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
		apiLimit:      ratelimit.New(cfg.RateLimit, cfg.RateWindow, now),
		nodeLimit:     ratelimit.New(cfg.RateLimit*NodeRateFactor, cfg.RateWindow, now),
		loginLimit:    ratelimit.New(cfg.RateLimitLogin, cfg.RateWindow, now),
	}
	s.draining, s.drain = context.WithCancel(context.Background())
	s.routes()
	return s
}

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

func (s *Server) handle(pattern string, a access, h handler) {
	method, path, _ := strings.Cut(pattern, " ")
	s.mux.Handle(method+" "+Prefix+path, s.wrap(a, h))
}

func (s *Server) routes() {
	s.handle("POST /auth/login", open, s.login)
	s.handle("POST /auth/refresh", open, s.refresh)
	s.handle("POST /auth/logout", selfService, s.logout)
	s.handle("GET /auth/oidc/login", open, s.oidcLogin)
	s.handle("GET /auth/oidc/callback", open, s.oidcCallback)
	s.handle("GET /health", anyone, s.health)

	s.handle("GET /users", adminOnly, s.listUsers)
	s.handle("POST /users", adminOnly, s.createUser)
	s.handle("GET /users/me", selfService, s.getMe)
	s.handle("PUT /users/me", selfService|ownAccount, s.updateMe)
	s.handle("PUT /users/{id}", adminOnly, s.updateUser)
	s.handle("DELETE /users/{id}", adminOnly, s.deleteUser)
	s.handle("POST /users/me/tokens", authenticated|ownAccount, s.createToken)
	s.handle("GET /users/me/tokens", authenticated|ownAccount, s.listTokens)
	// A token may revoke itself (the use case checks the account rule).
	s.handle("DELETE /users/me/tokens/{id}", authenticated, s.revokeToken)

	s.handle("GET /groups", authenticated, s.listGroups)
	s.handle("POST /groups", adminOnly, s.createGroup)
	s.handle("POST /groups/{id}/members", adminOnly, s.addGroupMembers)

	s.handle("GET /permissions", authenticated, s.listPermissions)
	s.handle("POST /permissions", authenticated, s.createPermission)
	s.handle("DELETE /permissions/{id}", authenticated, s.deletePermission)

	s.handle("GET /repositories", anyone, s.listRepos)
	s.handle("POST /repositories", authenticated, s.createRepo)
	s.handle("GET /repositories/{id}", anyone, s.getRepo)
	s.handle("PUT /repositories/{id}", authenticated, s.updateRepo)
	s.handle("DELETE /repositories/{id}", authenticated, s.deleteRepo)

	s.handle("GET /artifacts/{id}", anyone, s.getArtifact)
	s.handle("GET /artifacts/{id}/download", anyone, s.downloadArtifact)
	s.handle("DELETE /artifacts/{id}", authenticated, s.deleteArtifact)

	s.handle("GET /packages", anyone, s.listPackages)
	s.handle("GET /packages/{name}/versions", anyone, s.listVersions)

	s.handle("GET /webhooks", adminOnly, s.listWebhooks)
	s.handle("POST /webhooks", adminOnly, s.createWebhook)
	s.handle("GET /webhooks/{id}", adminOnly, s.getWebhook)
	s.handle("PUT /webhooks/{id}", adminOnly, s.updateWebhook)
	s.handle("DELETE /webhooks/{id}", adminOnly, s.deleteWebhook)
	s.handle("POST /webhooks/{id}/test", adminOnly, s.testWebhook)
	s.handle("GET /webhooks/{id}/deliveries", adminOnly, s.listDeliveries)
	s.handle("GET /webhooks/{id}/deliveries/{delivery}", adminOnly, s.getDelivery)
	s.handle("POST /webhooks/{id}/deliveries/{delivery}/redeliver", adminOnly, s.redeliver)
	s.handle("GET /events", authenticated, s.listEvents)
	s.handle("GET /admin/stats", adminOnly, s.stats)
	s.handle("POST /admin/cleanup", adminOnly, s.cleanup)
	s.handle("GET /admin/cluster", adminOnly, s.clusterView)
	s.handle("DELETE /admin/cluster/members/{id}", adminOnly, s.removeClusterMember)
	s.handle("GET /admin/directory", adminOnly, s.directoryStatus)

	s.handle("GET /edge-nodes", adminOnly, s.listEdges)
	s.handle("POST /edge-nodes", adminOnly, s.createEdge)
	s.handle("GET /edge-nodes/{id}", adminOnly, s.getEdge)
	s.handle("DELETE /edge-nodes/{id}", adminOnly, s.deleteEdge)
	s.handle("POST /edge-nodes/{id}/repositories", adminOnly, s.assignEdge)
	s.handle("DELETE /edge-nodes/{id}/repositories/{repo}", adminOnly, s.unassignEdge)
	s.handle("POST /edge-nodes/{id}/heartbeat", edgeNode, s.edgeHeartbeat)
	s.handle("POST /edge-nodes/{id}/events", edgeNode, s.edgeEvents)
	s.handle("GET /edge-nodes/{id}/feed", edgeNode, s.edgeFeed)
	s.handle("POST /edge-nodes/{id}/vouch", edgeNode, s.edgeVouch)
	s.handle("POST /edge-nodes/{id}/password", edgeNode, s.edgePassword)
	s.handle("GET /edge-nodes/{id}/blobs/{digest}", edgeNode, s.edgeBlob)

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
