// Package edge wires an edge node: a replica of the origin's metadata for
// the repositories assigned to the node, fed by the change feed; a blob
// cache that fetches from the origins; a heartbeat that reports the node
// and learns its assignment; and an HTTP server on fasthttp.
//
// It serves every format's read routes from the replica and the cache,
// with the same format servers as the origin; forwarding writes and the
// REST API come next (the server says so on those paths).
package edge

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/edge/upstream"
	"github.com/depot-registry/depot/replication/feed"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/format/plugin"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/policy"
	"github.com/depot-registry/depot/shared/seen"
	"github.com/depot-registry/depot/shared/version"
)

// Config of an edge process.
type Config struct {
	Origins   string // comma-separated origin base URLs
	NodeID    string
	NodeToken string
	Listen    string
	// TLSCert and TLSKey are PEM files: serve HTTPS.
	TLSCert, TLSKey string
	CacheDir        string
	CacheSize       int64 // bytes of unpinned blobs kept; 0 = no limit
	// Prefetch is what the node fetches ahead of demand: PrefetchAll,
	// PrefetchNone, or comma-separated repository names.
	Prefetch string

	LogFormat string
	LogLevel  string

	// Heartbeat is how often the node reports to an origin.
	Heartbeat time.Duration
	// HeaderTimeout bounds how long a client may take to send a request's
	// headers (a connection that dribbles them is closed).
	HeaderTimeout time.Duration
}

// DefaultConfig is an edge on loopback with its cache in ./edge-cache.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:8081", CacheDir: "./edge-cache", CacheSize: 50 << 30, Prefetch: PrefetchAll,
		LogFormat: "text", LogLevel: "info", Heartbeat: 5 * time.Second, HeaderTimeout: 30 * time.Second}
}

// Bind registers the settings on a flag set.
func (c *Config) Bind(s *config.Set) {
	s.Group("Origins and registration")
	s.String(&c.Origins, "origin", "DEPOT_ORIGIN", "origin base URL(s), comma-separated, e.g. http://origin-1:8080,http://origin-2:8080")
	s.String(&c.NodeID, "node-id", "DEPOT_NODE_ID", "this edge node's id, from its registration (POST /api/v1/edge-nodes)")
	s.String(&c.NodeToken, "node-token", "DEPOT_NODE_TOKEN", "this edge node's credential (dpe_...), from its registration; prefer the environment variable")
	s.Group("Network and TLS")
	s.String(&c.Listen, "listen", "DEPOT_LISTEN", "HTTP address to serve on")
	s.String(&c.TLSCert, "tls-cert", "DEPOT_TLS_CERT", "PEM certificate (with its chain) to serve HTTPS with, and --tls-key; without them the edge serves plain HTTP")
	s.String(&c.TLSKey, "tls-key", "DEPOT_TLS_KEY", "PEM private key of --tls-cert")
	s.Group("Cache and replica")
	s.String(&c.CacheDir, "cache-dir", "DEPOT_CACHE_DIR", "directory of the blob cache and the metadata replica")
	s.Bytes(&c.CacheSize, "cache-size", "DEPOT_CACHE_SIZE", "blob cache size limit (e.g. 50GiB; 0 = no limit)")
	s.String(&c.Prefetch, "prefetch", "DEPOT_PREFETCH", "blobs fetched ahead of demand and kept from eviction: all (of the assigned repositories), none, or comma-separated repository names")
	s.Group("Timing")
	s.Duration(&c.Heartbeat, "heartbeat", "DEPOT_HEARTBEAT", "how often the node reports to an origin and learns its assignment (e.g. 5s)")
	s.Duration(&c.HeaderTimeout, "header-timeout", "DEPOT_HEADER_TIMEOUT", "how long a client may take to send a request's headers")
	s.Group("Logging")
	s.String(&c.LogFormat, "log-format", "DEPOT_LOG_FORMAT", "log format: text or json")
	s.String(&c.LogLevel, "log-level", "DEPOT_LOG_LEVEL", "log level: debug, info, warn, error")
}

func (c *Config) origins() []string {
	var out []string
	for _, o := range strings.Split(c.Origins, ",") {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			out = append(out, o)
		}
	}
	return out
}

func (c *Config) check() error {
	switch {
	case len(c.origins()) == 0:
		return errors.New("--origin is required: the base URL of at least one origin")
	case c.NodeID == "" || c.NodeToken == "":
		return errors.New("--node-id and --node-token are required: register the node with POST /api/v1/edge-nodes on an origin")
	case c.CacheSize < 0:
		return errors.New("--cache-size must not be negative")
	case c.Heartbeat < 100*time.Millisecond:
		return errors.New("--heartbeat must be at least 100ms")
	case c.HeaderTimeout < 100*time.Millisecond:
		return errors.New("--header-timeout must be at least 100ms")
	}
	for _, o := range c.origins() {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return fmt.Errorf("--origin %q: want an http:// or https:// base URL", o)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	}
	if c.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
	}
	return nil
}

// Edge is a running edge node: the HTTP side (routes, forwarding) over
// components that each own their state: the feed follower (the replica),
// the heartbeat, the prefetcher, the download shipper, the blob cache.
type Edge struct {
	cfg      Config
	log      *slog.Logger
	out      io.Writer
	replica  *meta.Store
	cache    *cache.Cache
	client   *protocol.Client
	upstream *upstream.Upstream
	follower *feed.Follower
	beats    *heartbeat
	prefetch *prefetcher
	ship     *shipper

	authn        *auth.Authenticator
	env          *format.Env
	engine       *plugin.Engine   // runs the installed plugins' modules
	plugins      *plugin.Registry // the installed plugins, as this node serves them
	srv          *server.Server
	scrape       fasthttp.RequestHandler // /metrics
	fetchSeconds prometheus.Histogram    // how long an origin takes to start sending a blob
	syncing      chan struct{}           // one catch-up read of the feed at a time (catchUp)
}

// originTransport is the edge's connection pool to its origins. It keeps
// as many idle connections per origin as misses and forwarded requests
// run at once under load: with the default two, nearly every miss of a
// busy edge dialled a connection of its own (a twentieth of the edge's
// CPU on a cold pass, and the origin's accepting them).
func originTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	return t
}

// New opens the cache directory (replica and blobs).
func New(cfg Config, log *slog.Logger, out io.Writer) (*Edge, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o750); err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	// An origin's redirect is its client's to follow (a single sign-on
	// goes to the provider from the browser, with its cookies), never the
	// edge's.
	toOrigins := &http.Client{Transport: originTransport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	e := &Edge{cfg: cfg, log: log, out: out, syncing: make(chan struct{}, 1),
		client: &protocol.Client{Origins: cfg.origins(), NodeID: cfg.NodeID, Token: cfg.NodeToken, HTTP: toOrigins}}
	e.upstream = &upstream.Upstream{Origins: e.client.OriginList, HTTP: toOrigins, Credential: cfg.NodeToken}
	var err error
	if e.replica, err = meta.Open(filepath.Join(cfg.CacheDir, "replica.db")); err != nil {
		return nil, err
	}
	// A replica from before origins stopped sending password hashes and
	// emails loses them here (auth.EdgeUser).
	if n, err := e.replica.RewriteUsers(auth.EdgeUser); err != nil {
		e.replica.Close()
		return nil, fmt.Errorf("replica: %w", err)
	} else if n > 0 {
		log.Info("took password hashes and emails out of the replica", "users", n)
	}
	e.fetchSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "depot_edge_fetch_seconds",
		Help: "Time from asking an origin for a blob to its first byte.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)})
	fetch := func(ctx context.Context, digest string, offset int64) (io.ReadCloser, error) {
		start := time.Now()
		r, err := e.client.Fetch(ctx, digest, offset)
		if err == nil {
			e.fetchSeconds.Observe(time.Since(start).Seconds())
		}
		return r, err
	}
	if e.cache, err = cache.Open(filepath.Join(cfg.CacheDir, "blobs"), cfg.CacheSize, fetch); err != nil {
		e.replica.Close()
		return nil, err
	}
	e.follower = &feed.Follower{Client: e.client, Store: e.replica}
	e.prefetch = newPrefetcher(e.replica, e.cache, log, cfg.Prefetch)
	e.ship = &shipper{client: e.client, log: log, heartbeat: cfg.Heartbeat, seen: seen.New(maxSeen)}
	e.beats = &heartbeat{client: e.client, follower: e.follower, cache: e.cache, ship: e.ship, prefetch: e.prefetch,
		every: cfg.Heartbeat, log: log, out: out, reached: make(chan struct{}, 1)}
	return e, nil
}

// Run serves on ln and keeps the replica up to date until ctx ends.
func (e *Edge) Run(ctx context.Context, ln net.Listener) error {
	defer e.replica.Close()
	defer func() {
		if e.engine != nil {
			_ = e.engine.Close(context.Background())
		}
	}()
	// Background work ends (cancel, then wait) before the replica closes,
	// whichever way Run returns.
	var bg sync.WaitGroup
	defer bg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := e.firstContact(ctx); err != nil {
		return err
	}
	abs, _ := filepath.Abs(e.cfg.CacheDir)
	held := "none yet (the first heartbeat brings the assignment)"
	if ids, _ := e.replica.Followed(); len(ids) > 0 {
		held = strings.Join(repoNames(e.replica, ids), ", ")
	}
	scheme := "http"
	if e.cfg.TLSCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(e.out, "Depot edge %s listening on %s://%s\n  node id: %s\n  origins: %s\n  cache: %s (limit %s)\n  repositories: %s\n  replica at index %d; following the origins' change feed\n",
		version.Version, scheme, ln.Addr(), e.cfg.NodeID, strings.Join(e.cfg.origins(), ", "), abs, sizeText(e.cfg.CacheSize), held, e.replica.LastApplied())
	e.log.Info("depot edge started", "listen", ln.Addr().String(), "node_id", e.cfg.NodeID, "origins", e.cfg.origins(),
		"cache_dir", abs, "cache_size", e.cfg.CacheSize, "applied_index", e.replica.LastApplied(), "version", version.Version)

	bg.Go(func() { e.beats.run(ctx) })
	bg.Go(func() { e.prefetch.run(ctx) })
	bg.Go(func() { e.ship.run(ctx) })
	bg.Go(func() { _ = e.follower.Follow(ctx, 30*time.Second, e.beats.reached, e.log.With("component", "feed")) })

	// Bodies stream (a write goes to the origin as it arrives, never
	// whole in memory); the origin bounds their size.
	// (fasthttp would otherwise parse a multipart body, twine's upload, into
	// memory and temporary files and encode it again.)
	// Headers must arrive within HeaderTimeout; a body then has as long
	// as it needs (the origin it goes to cuts one that dribbles).
	srv := &fasthttp.Server{Handler: e.routes().Handle, Name: "depot-edge", IdleTimeout: 2 * time.Minute,
		ReadTimeout: e.cfg.HeaderTimeout, HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: bodyTimeout}
		},
		NoDefaultServerHeader: true, StreamRequestBody: true, MaxRequestBodySize: 1 << 40, DisablePreParseMultipartForm: true,
		Logger: connLogger{e.log}}
	errc := make(chan error, 1)
	go func() {
		if e.cfg.TLSCert != "" {
			errc <- srv.ServeTLS(ln, e.cfg.TLSCert, e.cfg.TLSKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	e.log.Info("shutting down")
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	return srv.ShutdownWithContext(sctx)
}

// firstContact reports the node once before it says it listens. An edge
// with nothing replicated yet that every origin refuses can serve
// nothing, and never will with the credential it has: it stops, saying
// what to check. With a replica it serves what it has whatever the
// origins say; an origin it cannot reach may be starting (the heartbeat
// goes on trying).
func (e *Edge) firstContact(ctx context.Context) error {
	if e.replica.LastApplied() > 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := e.beats.beat(ctx); errors.Is(err, protocol.ErrRefused) {
		return fmt.Errorf("the origins refused this edge node (node id %s): check --node-id (DEPOT_NODE_ID) and DEPOT_NODE_TOKEN "+
			"against what POST /api/v1/edge-nodes answered when the node was registered, and that it was not deleted since: %w", e.cfg.NodeID, err)
	}
	return nil
}

func sizeText(n int64) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// health says why the node is degraded: no origin answered its last
// three heartbeats, or the replica has not reached, within
// replicaLagLimit, an index an origin had applied. It keeps serving what
// it has meanwhile.
func (e *Edge) health() (reasons []string, details map[string]any) {
	now := time.Now()
	if e.beats.unreachable(now) {
		reasons = append(reasons, "origin_unreachable")
	}
	applied, origin := e.replica.LastApplied(), e.beats.originIndex.Load()
	if e.beats.lag.lagging(applied, now, replicaLagLimit) {
		reasons = append(reasons, "replica_lagging")
	}
	followed, _ := e.replica.Followed()
	if followed == nil {
		followed = []string{}
	}
	details = map[string]any{"node_id": e.cfg.NodeID, "applied_index": applied, "origin_index": origin,
		"repository_ids": followed, "origins": e.client.OriginList(), "cache": e.cache.Stats(), "version": version.Version,
		"sync": e.prefetch.sync()}
	if last := e.beats.lastContact.Load(); last != 0 {
		details["last_contact"] = time.Unix(0, last).UTC()
	}
	return reasons, details
}

// routes mounts every format's read routes over the replica, with the
// cache for blobs. Credentials are checked against the replica: API
// tokens and passwords work while every origin is away. An origin's JWTs
// (login sessions, registry tokens for pushes) are vouched for by an
// origin, once per token. Registry tokens this edge issues are signed
// with a secret of this process, so only this edge accepts them; the
// edge holds no secret an origin accepts.
func (e *Edge) routes() *server.Server {
	now := time.Now
	authn := &auth.Authenticator{Meta: e.replica, JWT: auth.NewJWT(auth.RandomSecret(), now), Now: now,
		Cache: auth.NewCredCache(time.Minute, 10000, now), Hasher: auth.NewHasher(0), Guard: auth.NewGuard(10, 100, time.Minute, now),
		Remote: newVouches(e.client.Vouch, now).Remote, RemotePassword: e.checkPassword, Partial: true}
	env := &format.Env{Meta: e.replica, Now: now, Tokens: tokens{authn},
		OnDownload: func(r *format.Request, a *meta.Artifact) {
			e.ship.record(&server.Download{Artifact: a, Repo: r.Repo, Who: r.Principal.Actor()}, net.ParseIP(r.RemoteAddr))
		},
		// The security policies and verdicts of the replica decide, with
		// every origin away too.
		Admit: policy.Admit(e.replica, now, e.ship.refused)}
	s := &server.Server{Cache: e.cache, Other: e.other, Forward: e.forward, Index: e.replica.LastApplied,
		CatchUp: e.catchUp, Downloaded: e.ship.record}
	e.authn, e.env, e.srv = authn, env, s
	e.scrape = e.metrics() // reads e.srv
	for _, f := range all.Build(env) {
		srv := format.NewServer(f, env, nil, authn, e.log)
		for _, prefix := range format.Prefixes(f) {
			s.Mounts = append(s.Mounts, server.Mount{Prefix: prefix, Server: srv})
		}
	}
	e.servePlugins(s, env, authn)
	return s
}

// checkPassword has an origin check a password (the edge holds no
// password hashes); a yes is remembered for the credential cache's minute.
func (e *Edge) checkPassword(ctx context.Context, user, pass, remote string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, vouchTimeout)
	defer cancel()
	return e.client.CheckPassword(ctx, user, pass, remote)
}

// tokens issues this edge's registry tokens, for reads. A token that
// grants pushes is an origin's to issue, since the pushes go there with
// it: the token request goes to an origin too (format.ErrUpstream), and
// the edge has an origin vouch for the token when it is presented here.
type tokens struct{ *auth.Authenticator }

func (t tokens) IssueRegistryToken(p *auth.Principal, g auth.RegistryGrant, ttl time.Duration) (string, time.Time, error) {
	if !g.ReadOnly() {
		return "", time.Time{}, format.ErrUpstream
	}
	return t.Authenticator.IssueRegistryToken(p, g, ttl)
}

// forward sends a request the edge does not serve to an origin. After a
// write the origin applied, it waits (at most writeWait) until the replica
// has applied it too, so the client reads its write here at once.
func (e *Edge) forward(ctx *fasthttp.RequestCtx) error {
	idx, err := e.upstream.Forward(ctx)
	if err != nil {
		e.log.Warn("forwarding to an origin failed", "method", string(ctx.Method()), "path", string(ctx.Path()), "err", err)
		return err
	}
	// A write's index (reads answer theirs too: nothing to wait for).
	if idx > 0 && ctx.Response.StatusCode() < 300 && !ctx.IsGet() && !ctx.IsHead() {
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		defer cancel()
		if err := e.catchUp(wctx, idx); err != nil {
			e.log.Warn("the replica has not applied a forwarded write yet", "index", idx, "applied", e.replica.LastApplied(), "err", err)
		}
	}
	return nil
}

// catchUp brings the replica to index idx. The feed's long poll brings
// a change the node may see at once, so catchUp first waits for it a
// moment; a write it may not see (a login session, another repository)
// does not wake the poll, so then the edge reads the feed itself until it
// is past idx, one read at a time for all the requests that wait (a
// burst of forwarded writes costs the origin one read each round, not
// one per write), asking again shortly when the origin it reached has
// not applied idx yet (a follower in a cluster).
func (e *Edge) catchUp(ctx context.Context, idx uint64) error {
	for e.replica.LastApplied() < idx {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := e.replica.WaitIndex(wctx, idx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := e.syncFor(ctx, idx); err != nil {
			return err
		}
	}
	return nil
}

// syncFor reads the feed once for the requests waiting for idx, unless a
// read that ended while this one waited its turn brought idx already.
func (e *Edge) syncFor(ctx context.Context, idx uint64) error {
	select {
	case e.syncing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.syncing }()
	if e.replica.LastApplied() >= idx {
		return nil
	}
	return e.follower.Sync(ctx, 0)
}

// replicaLagLimit is how long the replica may take to reach an index an
// origin had applied: twice the feed's long poll, after which a feed
// with nothing for the node still moves its index.
const replicaLagLimit = time.Minute

// bodyTimeout bounds reading one request body at the edge: a day, for
// the largest upload on a slow link.
const bodyTimeout = 24 * time.Hour

// writeWait bounds how long a forwarded write waits for the replica.
const writeWait = 10 * time.Second

// other answers what no format serves: health here, the rest of the API
// at an origin.
func (e *Edge) other(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	switch {
	case path == "/metrics":
		e.scrape(ctx)
	case path == "/api/v1/health":
		// The origin's rule: status and reasons for anyone, the node's
		// details (its origins, id, repositories) for a signed-in caller.
		reasons, details := e.health()
		body := map[string]any{"status": "ok"}
		if p, err := e.authn.Authenticate(ctx, string(ctx.Request.Header.Peek("Authorization")), ctx.RemoteIP().String()); err == nil && !p.Anonymous() {
			body["node"] = details
		}
		status := http.StatusOK
		if len(reasons) > 0 {
			body["status"], body["reasons"], status = "degraded", reasons, http.StatusServiceUnavailable
		}
		writeJSON(ctx, status, body)
	case (ctx.IsGet() || ctx.IsHead()) && downloadID(path) != "":
		e.download(ctx, downloadID(path))
	case ctx.IsGet() && searchKind(path) != "":
		e.search(ctx, searchKind(path))
	case strings.HasPrefix(path, "/api/v1/"):
		if err := e.forward(ctx); err != nil {
			server.APIError(ctx, apierr.New(apierr.Unavailable, "this edge node cannot reach an origin; retry later").With(apierr.RetryAfter, 5))
		}
	case e.plugins != nil && e.pluginNotHere(ctx, path):
		// An installed plugin whose module this node could not load
		// yet: an origin serves its paths meanwhile.
		if err := e.forward(ctx); err != nil {
			server.APIError(ctx, apierr.New(apierr.Unavailable, "this edge node has not loaded the plugin serving %s and cannot reach an origin; retry later", path).With(apierr.RetryAfter, 5))
		}
	default:
		server.NotServed(ctx, "nothing is served at "+path)
	}
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(buf.Bytes())
}

// download serves GET /api/v1/artifacts/:id/download from the replica and
// the cache, with the origin's rules and answer; an artifact of a
// repository this node does not hold goes to an origin.
func (e *Edge) download(ctx *fasthttp.RequestCtx, id string) {
	p, err := e.authn.Authenticate(ctx, string(ctx.Request.Header.Peek("Authorization")), ctx.RemoteIP().String())
	var a *meta.Artifact
	var repo *meta.Repository
	if err == nil {
		err = e.replica.View(func(tx *meta.Tx) error {
			var err error
			if a, err = tx.Artifact(id); err != nil {
				return err
			}
			if repo, err = tx.Repo(a.RepositoryID); err != nil {
				return err
			}
			return format.AccessByID(tx, p, repo, repo.ID, meta.ActionRead)
		})
	}
	// An artifact of a repository this node does not hold, or a credential
	// whose user it does not hold: an origin answers.
	if errors.Is(err, meta.ErrNotFound) && a == nil || errors.Is(err, auth.ErrNotHere) {
		if err := e.forward(ctx); err == nil {
			return
		}
	}
	if err == nil {
		req := server.Request(ctx)
		req.Principal, req.Repo = p, repo
		var resp *format.Response
		if resp, err = e.env.Serve(req, a, true); err == nil {
			if err = e.srv.Write(ctx, resp); err == nil {
				return
			}
		}
	}
	ae := format.Classify(err)
	if ae.Code == apierr.Internal {
		e.log.Error("edge download failed", "artifact", id, "err", err)
	}
	server.APIError(ctx, ae)
}

// downloadID is the artifact id of a REST download path, or "".
func downloadID(path string) string {
	id, ok := strings.CutPrefix(path, "/api/v1/artifacts/")
	if id, ok = strings.CutSuffix(id, "/download"); !ok || id == "" || strings.Contains(id, "/") {
		return ""
	}
	return id
}

// connLogger takes fasthttp's reports of connections it could not serve
// (a client speaking TLS to a plain-HTTP port, garbage, resets): debug
// lines, cut short, never the request bytes fasthttp quotes in full.
type connLogger struct{ log *slog.Logger }

func (l connLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 160 {
		msg = msg[:160] + "..."
	}
	l.log.Debug("connection not served", "detail", strings.ToValidUTF8(msg, "?"))
}
