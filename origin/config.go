package origin

import (
	"io"
	"time"

	"github.com/depot-registry/depot/origin/service/webhooks"
	"github.com/depot-registry/depot/shared/auth"

	"github.com/depot-registry/depot/shared/diskspace"
	"github.com/depot-registry/depot/shared/format"

	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/settings"
)

// Config of an origin process. Every field has a flag and/or an
// environment variable; see Bind.
type Config struct {
	// Given says how a setting was given at startup (config.Set.Given):
	// the run-time settings whose flag or variable was are fixed. Nil
	// (a Config not bound to flags): none is.
	Given func(flag string) string

	Listen   string
	DataDir  string
	RaftAddr string
	NodeID   string
	// GossipAddr is where the node gossips membership (memberlist, UDP
	// and TCP); Join lists gossip addresses of running origins to join
	// (comma-separated); BootstrapExpect forms a new cluster once that
	// many fresh origins started with it see each other. RaftAddr and
	// GossipAddr left empty: see resolveAddrs.
	GossipAddr      string
	Join            string
	BootstrapExpect int64
	ExternalURL     string
	TLSCert, TLSKey string // PEM files: serve HTTPS
	RequireHTTPS    bool

	JWTSecret     string
	SigningKEK    string
	ClusterKey    string // base64; see clusterKey
	AccessTTL     time.Duration
	RefreshTTL    time.Duration
	AdminPassword string

	DemoMode        bool
	AuditEnabled    bool
	AuditPath       string
	RateLimit       int64
	RateLimitLogin  int64
	RateWindow      time.Duration
	MaxUploadBytes  int64
	UsersCreateRepo bool
	// MinFreeBytes is the free space of the data directory's filesystem
	// below which uploads are refused (507), so the raft log and the
	// metadata on the same disk never run out; 0 = no minimum.
	MinFreeBytes int64

	// AuthFailures is how many failed credential checks one client address
	// may make per RateWindow before password checks from it are refused
	// (RateLimitLogin bounds them per address and username).
	AuthFailures int64
	// TrustedProxies lists the addresses or CIDR ranges (comma-separated)
	// whose X-Forwarded-For/-Proto/-Host headers are believed.
	TrustedProxies string
	// CORSOrigins lists the browser origins (comma-separated, or "*") that
	// may call the API from another site.
	CORSOrigins string
	// MinUploadRate is the slowest upload accepted, in bytes per second
	// averaged over UploadRateWindow; 0 = no minimum.
	MinUploadRate    int64
	UploadRateWindow time.Duration
	// BodyTimeout bounds reading an API request body (small JSON).
	BodyTimeout time.Duration

	// GCGrace is how long a blob stays after it was last written or
	// linked even if nothing refers to it; GCInterval is how often
	// garbage collection runs on its own (0 = only on request).
	GCGrace    time.Duration
	GCInterval time.Duration

	LogFormat string
	LogLevel  string

	// Clock replaces the wall clock for expiry, rate limits and
	// timestamps (tests move it forward instead of sleeping).
	Clock func() time.Time

	// Formats, when set, replaces the formats of shared/format/all (tests
	// of a format under construction).
	Formats []func(*format.Env) format.Format

	// Statfs replaces the reading of the data disk's free space, and
	// BlobWriter wraps every write of blob bytes (tests simulate a nearly
	// full disk and a full one with them).
	Statfs diskspace.StatFunc
	// PasswordParams are the argon2id parameters of new password hashes
	// (zero: the default); tests make them cheap.
	PasswordParams auth.PasswordParams
	BlobWriter     func(io.Writer) io.Writer

	// RaftTimeout is raft's heartbeat and election timeout: how long
	// followers go without hearing from a leader before electing another
	// (a failover takes one to two of it). Tests use short ones so a
	// single node elects itself at once.
	RaftTimeout time.Duration
	// FastGossip probes and gossips every few tens of milliseconds
	// (tests on loopback).
	FastGossip bool
	// DownloadsReport is how often this origin adds the downloads it
	// counted to the cluster's hourly history (default a minute).
	DownloadsReport time.Duration
	// Webhooks configures the event log and webhook deliveries.
	Webhooks webhooks.Config
	// LDAP is the directory users sign in with (none without a URL).
	LDAP LDAPConfig
	// OIDC is the OpenID provider users sign in with (none without an
	// issuer).
	OIDC OIDCConfig
	// BlobCopies is how many origins keep each blob (blobs.Copies); 0:
	// every origin (blobs.Everywhere). Either way a write is acknowledged
	// once a majority of the blob's holders have it.
	BlobCopies int64
}

// The raft and gossip addresses of an origin of a cluster started
// without them (origins on one host, as in a demonstration).
const (
	clusterRaftAddr   = "127.0.0.1:8300"
	clusterGossipAddr = "127.0.0.1:8301"
)

// alone reports whether the origin forms a cluster of its own and knows
// of no other: started without --join or --bootstrap-expect, and never a
// member of a cluster (no other origins kept in its data directory).
func (cfg *Config) alone() bool {
	return cfg.Join == "" && cfg.BootstrapExpect <= 1 && len(keptPeers(cfg.DataDir)) == 0
}

// resolveAddrs fills in the raft and gossip addresses not given. An
// origin alone needs neither port reachable: raft listens on a loopback
// port of the system's choice and nothing gossips, so a first start
// cannot trip over another program's ports (8300 and 8301 are Consul's
// too). It becomes a cluster's first member when started again with
// --raft-addr and --gossip-addr (see the README). Any other origin gets
// the cluster defaults.
func (cfg *Config) resolveAddrs() {
	alone := cfg.alone()
	switch {
	case cfg.RaftAddr != "":
	case alone:
		cfg.RaftAddr = "127.0.0.1:0"
	default:
		cfg.RaftAddr = clusterRaftAddr
	}
	if cfg.GossipAddr == "" && !alone {
		cfg.GossipAddr = clusterGossipAddr
	}
}

// DefaultConfig is a single-node origin on loopback with data in ./data.
func DefaultConfig() Config {
	return Config{
		Listen:           "127.0.0.1:8080",
		DataDir:          "./data",
		RaftTimeout:      600 * time.Millisecond,
		AccessTTL:        900 * time.Second,
		RefreshTTL:       604800 * time.Second,
		RateLimit:        1200,
		RateLimitLogin:   10,
		RateWindow:       60 * time.Second,
		MaxUploadBytes:   10 << 30,
		MinFreeBytes:     2 << 30,
		UsersCreateRepo:  true,
		AuthFailures:     100,
		MinUploadRate:    1024,
		UploadRateWindow: 60 * time.Second,
		BodyTimeout:      30 * time.Second,
		GCGrace:          time.Hour,
		GCInterval:       6 * time.Hour,
		DownloadsReport:  time.Minute,
		LogFormat:        "text",
		LogLevel:         "info",
		Webhooks:         webhooks.Defaults(),
		LDAP: LDAPConfig{GroupAttribute: "cn", DefaultRole: string(meta.RoleUser), Timeout: 5 * time.Second, MaxConns: 8,
			SyncInterval: time.Hour},
		OIDC: OIDCConfig{Scopes: "openid,email,profile", UsernameClaim: "preferred_username", EmailClaim: "email", NameClaim: "name",
			GroupsClaim: "groups", DefaultRole: string(meta.RoleUser)},
	}
}

// Bind registers the settings on a flag set, in groups (depot help
// origin lists them so).
func (c *Config) Bind(s *config.Set) {
	c.Given = s.Given
	s.Group("Network")
	s.String(&c.Listen, "listen", "DEPOT_LISTEN", "HTTP address to serve the API and package formats on")
	s.String(&c.ExternalURL, "external-url", "DEPOT_EXTERNAL_URL", "public base URL for absolute links (default: from each request)")
	s.String(&c.CORSOrigins, "cors-origins", "DEPOT_CORS_ORIGINS", "comma-separated browser origins (https://host[:port], or *) allowed to call the API from another site")
	s.Group("Cluster")
	s.String(&c.NodeID, "node-id", "DEPOT_NODE_ID", "stable node id (generated once and kept in the data dir when empty)")
	s.String(&c.RaftAddr, "raft-addr", "DEPOT_RAFT_ADDR", "address for raft traffic between origin peers (default "+clusterRaftAddr+" in a cluster; an origin alone uses a loopback port of the system's choice)")
	s.String(&c.GossipAddr, "gossip-addr", "DEPOT_GOSSIP_ADDR", "address (UDP and TCP) for membership gossip between cluster nodes, encrypted with a key derived from the cluster key (default "+clusterGossipAddr+" in a cluster; an origin alone gossips only when it is given)")
	s.String(&c.Join, "join", "DEPOT_JOIN", "gossip address(es) of running origins to join, comma-separated; a node that joins never forms a cluster of its own")
	s.Int(&c.BootstrapExpect, "bootstrap-expect", "DEPOT_BOOTSTRAP_EXPECT", "form a new cluster once this many fresh origins started with the same value see each other (with --join among them); 0: a node without --join forms a one-node cluster")
	s.String(&c.ClusterKey, "cluster-key", "DEPOT_CLUSTER_KEY", "secret the origins of a cluster share, the same on every origin ('depot keygen' prints one): peers prove it in a mutual TLS handshake on the raft port, which carries raft and the peers' RPC (forwarded writes, blob copies), and gossip is encrypted and authenticated with a key derived from it. Required except for an origin alone whose raft and gossip addresses are loopback (then generated and kept in the data dir)")
	s.Int(&c.BlobCopies, "blob-copies", "DEPOT_BLOB_COPIES", "how many origins of a cluster keep each blob (0 = every origin); give every origin the same value. A write is acknowledged once a majority of the blob's holders have it")
	s.Group("TLS and proxies")
	s.String(&c.TLSCert, "tls-cert", "DEPOT_TLS_CERT", "PEM certificate (with its chain) to serve HTTPS with, and --tls-key; without them the origin serves plain HTTP")
	s.String(&c.TLSKey, "tls-key", "DEPOT_TLS_KEY", "PEM private key of --tls-cert")
	s.Bool(&c.RequireHTTPS, "require-https", "REQUIRE_HTTPS", "refuse requests that did not come over HTTPS (here, or to a trusted proxy that says so in X-Forwarded-Proto), except health checks")
	s.String(&c.TrustedProxies, "trusted-proxies", "DEPOT_TRUSTED_PROXIES", "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-* headers are trusted (default: none)")
	s.Group("Sign-in and accounts")
	s.String(&c.SigningKEK, "", "DEPOT_SIGNING_KEK", "key-encryption key that seals signing keys' private parts: 32 random bytes in base64 (openssl rand -base64 32) or hex, the same on every origin; without it no signing key can be made or used (see Signing in the README)")
	s.String(&c.JWTSecret, "", "JWT_SECRET", "HS256 secret for access and refresh tokens; every origin of a cluster must share it (generated and kept in the data dir when empty)")
	s.Seconds(&c.AccessTTL, "access-token-expiry", "JWT_ACCESS_TOKEN_EXPIRY", "access token lifetime in seconds")
	s.Seconds(&c.RefreshTTL, "refresh-token-expiry", "JWT_REFRESH_TOKEN_EXPIRY", "refresh token lifetime in seconds")
	s.String(&c.AdminPassword, "", "DEPOT_ADMIN_PASSWORD", "initial password of the admin user, read only when a new cluster creates it: changing it later does nothing (generated and printed once when empty)")
	s.Bool(&c.UsersCreateRepo, "users-create-repos", "DEPOT_USERS_CREATE_REPOS", "let users with role 'user' create repositories")
	s.Bool(&c.DemoMode, "demo-mode", "DEMO_MODE", "a read-only instance: refuse every write, on the API and on the package paths (403 DEMO_MODE), except login, refresh, logout and a pending initial password change")
	s.Bool(&c.AuditEnabled, "audit-log", "AUDIT_LOG_ENABLED", "write a JSON audit line per login and per write")
	s.String(&c.AuditPath, "audit-log-path", "AUDIT_LOG_PATH", "audit log file (default <data-dir>/audit.log)")
	c.LDAP.bind(s)
	c.OIDC.bind(s)
	s.Group("Limits")
	s.Int(&c.RateLimit, "rate-limit", "RATE_LIMIT_API", "API requests allowed per client per window (0 = unlimited)")
	s.Int(&c.RateLimitLogin, "rate-limit-login", "RATE_LIMIT_LOGIN", "login attempts allowed per client and username per window")
	s.Seconds(&c.RateWindow, "rate-limit-window", "RATE_LIMIT_WINDOW", "rate limit window in seconds")
	s.Int(&c.AuthFailures, "rate-limit-auth-failures", "RATE_LIMIT_AUTH_FAILURES", "failed credential checks allowed per client address per window before its password checks are refused")
	s.Int(&c.MaxUploadBytes, "max-upload-bytes", "DEPOT_MAX_UPLOAD_BYTES", "largest accepted upload in bytes")
	s.Int(&c.MinUploadRate, "min-upload-rate", "DEPOT_MIN_UPLOAD_RATE", "slowest accepted request body in bytes per second, averaged over 60-second windows (0 = no minimum)")
	s.Group("Storage and garbage collection")
	s.String(&c.DataDir, "data-dir", "DEPOT_DATA_DIR", "directory for metadata, raft log and blobs")
	s.Int(&c.MinFreeBytes, "min-free-bytes", "DEPOT_MIN_FREE_BYTES", "free space in bytes the data directory's disk keeps: below it uploads are refused with 507 and health says degraded (0 = no minimum)")
	s.Duration(&c.GCGrace, "gc-grace", "DEPOT_GC_GRACE", "garbage collection keeps an unreferenced blob this long after it was last written or linked (e.g. 1h, 90m)")
	s.Duration(&c.GCInterval, "gc-interval", "DEPOT_GC_INTERVAL", "run garbage collection this often (0 = only on POST /api/v1/admin/cleanup)")
	s.Duration(&c.DownloadsReport, "downloads-report", "DEPOT_DOWNLOADS_REPORT", "how often this origin adds the downloads it counted (its own and its edges') to the cluster's download history")
	s.Group("Webhooks and events")
	w := &c.Webhooks
	s.Bool(&w.Enabled, "webhooks-enabled", "WEBHOOKS_ENABLED", "deliver events to webhooks (events are logged for GET /api/v1/events either way)")
	s.Seconds(&w.Timeout, "webhook-timeout", "WEBHOOK_TIMEOUT_SECONDS", "a webhook delivery succeeds on a 2xx within this many seconds")
	s.Count(&w.MaxRetries, "webhook-max-retries", "WEBHOOK_MAX_RETRIES", "retries after a failed delivery (each delivery is given up 24 hours after its event in any case)")
	s.String(&w.Backoff, "webhook-retry-backoff", "WEBHOOK_RETRY_BACKOFF", "retry schedule: exponential (1m, 5m, 30m, 2h, 6h, then every 6h) or linear (1m, 2m, 3m...)")
	s.Count(&w.Concurrency, "webhook-concurrency", "WEBHOOK_CONCURRENCY", "webhook deliveries in flight at once")
	s.Count(&w.QueueSize, "webhook-queue-size", "WEBHOOK_QUEUE_SIZE", "pending webhook deliveries at most (events wait in the log beyond it), and download events each origin buffers before recording them (beyond it they are dropped and counted)")
	s.Count(&w.RateLimit, "webhook-rate-limit", "WEBHOOK_RATE_LIMIT", "delivery attempts per webhook per minute (0 = unlimited)")
	s.Bool(&w.AllowPrivate, "webhook-allow-private-networks", "WEBHOOK_ALLOW_PRIVATE_NETWORKS", "let webhooks deliver to addresses inside the site (private, loopback, link-local, carrier-grade NAT, NAT64)")
	s.Duration(&w.EventRetention, "event-retention", "DEPOT_EVENT_RETENTION", "how long the event log and webhook delivery history are kept (e.g. 168h)")
	s.Count(&w.MaxEvents, "event-log-max", "DEPOT_EVENT_LOG_MAX", "most events the event log keeps (the oldest go first)")
	s.Bool(&w.LogDownloads, "event-log-downloads", "DEPOT_EVENT_LOG_DOWNLOADS", "record every download in the event log; by default downloads are recorded only while an active webhook subscribes to artifact.downloaded (or *)")
	s.Group("Logging")
	s.String(&c.LogFormat, "log-format", "DEPOT_LOG_FORMAT", "log format: text or json")
	s.String(&c.LogLevel, "log-level", "DEPOT_LOG_LEVEL", "log level: debug, info, warn, error")
}

// settingsSource is this origin's side of the run-time settings: the
// values its flags gave, and those fixed by being given.
func (c *Config) settingsSource() settings.Source {
	w := c.Webhooks
	src := settings.Source{Fixed: map[string]string{}, Startup: settings.Values{
		UsersCreateRepositories: c.UsersCreateRepo, RateLimitAPI: c.RateLimit, RateLimitLogin: c.RateLimitLogin,
		RateLimitWindowSeconds: int64(c.RateWindow / time.Second), WebhooksEnabled: w.Enabled,
		WebhookTimeoutSeconds: int64(w.Timeout / time.Second), WebhookMaxRetries: int64(w.MaxRetries),
		WebhookRetryBackoff: w.Backoff, WebhookRateLimit: int64(w.RateLimit), BackupKeep: 7, BackupIncludeArtifacts: true,
		RetentionIntervalHours: 24, ScanOnUpload: true}}
	for _, d := range settings.Defs {
		if d.Flag != "" && c.Given != nil {
			if by := c.Given(d.Flag); by != "" {
				src.Fixed[d.Key] = by
			}
		}
	}
	return src
}
