// Package origin wires an origin process: the metadata store under Raft,
// the blob store, the REST API and the package-format paths.
package origin

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/cluster/leader"
	"github.com/depot-registry/depot/cluster/membership"
	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/origin/api"
	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/fsm"
	"github.com/depot-registry/depot/origin/service/audit"
	"github.com/depot-registry/depot/origin/service/backup"
	"github.com/depot-registry/depot/origin/service/downloads"
	"github.com/depot-registry/depot/origin/service/events"
	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/origin/service/indexer"
	"github.com/depot-registry/depot/origin/service/migrate"
	"github.com/depot-registry/depot/origin/service/retention"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/origin/service/signer"
	"github.com/depot-registry/depot/origin/service/webhooks"
	"github.com/depot-registry/depot/origin/webui"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/auth/ldap"
	"github.com/depot-registry/depot/shared/blob/fs"
	"github.com/depot-registry/depot/shared/diskspace"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/format/plugin"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/metrics"
	"github.com/depot-registry/depot/shared/progress"
	"github.com/depot-registry/depot/shared/seen"
	"github.com/depot-registry/depot/shared/signing"
	"github.com/depot-registry/depot/shared/version"
	"github.com/depot-registry/depot/shared/vuln"
)

// Origin is a running origin process.
type Origin struct {
	cfg    Config
	log    *slog.Logger
	out    io.Writer        // startup banner
	now    func() time.Time // cfg.Clock or the wall clock
	nodeID string
	key    peerauth.Key
	secret []byte // JWT
	sealer *signing.Sealer
	store  *meta.Store
	local  *fs.FS // this origin's own blobs, on its disk
	// directory checks LDAP users' passwords (nil: no directory);
	// directorySync follows the syncs this origin runs as the leader.
	directory     *ldap.Directory
	directorySync *progress.Tracker
	app           *app.App
	// blobs is local with replication: what every part of the origin
	// uses (writes reach a quorum, reads fetch what is missing here).
	blobs  *blobs.Store
	audit  *audit.Log
	node   *raftnode.Node
	commit leader.Applier
	// The cluster: the gossip pool, its change signal, and the loop that
	// reconciles raft with it (stopped by close).
	pool    *membership.Pool
	peerSrv *http.Server    // the peers' RPC on the raft port
	peers   *peerrpc.Client // calls the peers' RPC
	forward *leader.Forwarding
	// caughtUp: since it started, this origin has applied what the
	// leader had committed when asked (health says catching_up until).
	caughtUp  atomic.Bool
	downloads *downloads.Counter // served here and by the edges reporting here
	// seen are the artifacts downloaded here or at the edges reporting
	// here since the last report (their last download day).
	seen   *seen.Set
	events *events.Recorder // download events, batched into the log
	// recordDownloads says whether downloads are events now.
	recordDownloads *events.Gate
	webhooks        *webhooks.Queue  // deliveries, run by the leader
	indexer         *indexer.Indexer // search's package information, run by the leader
	backups         *backup.Service  // backups and restores, run by the leader
	retention       *retention.Service
	scans           *scan.Service
	signer          *signer.Service
	migrator        *migrate.Service
	plugins         *plugin.Engine // runs the installed plugins' modules
	// baseURL is where clients reach this origin: --external-url, or the
	// address it listens on (set once it listens).
	baseURL     atomic.Pointer[string]
	poolChanged chan struct{}
	stopLoop    func()
	stopJobs    func()
	metrics     *metrics.Metrics
	space       *diskspace.Guard
	gc          *gc.Collector
	api         *api.Server
	ui          *webui.UI
	handler     http.Handler
}

// New opens the data directory and starts raft; Run serves. It builds the
// origin in stages, each standing on the ones before it; ctx bounds the
// waits (raft electing a leader) and cancelling it stops the start.
func New(ctx context.Context, cfg Config, log *slog.Logger, out io.Writer) (o *Origin, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.resolveAddrs()
	if err := cfg.probeAddrs(); err != nil {
		return nil, err // before anything is written to the data directory
	}
	now := cfg.Clock
	if now == nil {
		now = time.Now
	}
	o = &Origin{cfg: cfg, log: log, out: out, now: now, poolChanged: make(chan struct{}, 1), downloads: downloads.New(now),
		seen: seen.New(maxSeen)}
	// Every error return sets o to nil: close what was built through a copy.
	built := o
	// A first start that fails leaves no data directory behind: the next
	// start is a first start again (not an origin with a node id, an
	// admin and a raft log of its own that cannot join the cluster).
	fresh, existed := emptyDir(cfg.DataDir)
	defer func() {
		if err != nil {
			built.close()
			if fresh {
				removeFresh(cfg.DataDir, existed)
			}
		}
	}()
	for _, stage := range []func(context.Context) error{o.openData, o.startRaft, o.serve, o.startJobs} {
		if err := stage(ctx); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// openData opens what lives in the data directory: the node's identity
// and keys, the metadata store, the blob store and the audit log.
func (o *Origin) openData(context.Context) error {
	cfg := o.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	var err error
	if o.nodeID, err = persisted(filepath.Join(cfg.DataDir, "node-id"), cfg.NodeID, func() string { return "origin-" + auth.NewID()[:12] }); err != nil {
		return err
	}
	if o.key, err = clusterKey(cfg); err != nil {
		return err
	}
	var generated bool
	if o.secret, generated, err = jwtSecret(cfg); err != nil {
		return err
	}
	if o.sealer, err = signingSealer(cfg); err != nil {
		return err
	}
	if generated {
		fmt.Fprintf(o.out, "WARNING: DEPOT_JWT_SECRET (or JWT_SECRET) was not set; generated one and kept it in %s.\n"+
			"         Every origin of a cluster must share one secret: set DEPOT_JWT_SECRET on each.\n", filepath.Join(cfg.DataDir, "jwt-secret"))
	}
	if o.store, err = meta.Open(filepath.Join(cfg.DataDir, "meta.db")); err != nil {
		return err
	}
	// Upload ids carry this origin's tag, so another origin given one
	// continues the upload here.
	if o.local, err = fs.New(filepath.Join(cfg.DataDir, "blobs"), fs.WithWriter(cfg.BlobWriter), fs.WithClock(cfg.Clock),
		fs.WithUploadIDPrefix(blobs.UploadIDPrefix(o.nodeID))); err != nil {
		return err
	}
	if cfg.AuditEnabled {
		p := cmp.Or(cfg.AuditPath, filepath.Join(cfg.DataDir, "audit.log"))
		if o.audit, err = audit.Open(p, o.nodeID, o.now); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
	}
	return nil
}

// startRaft starts the raft node over the store and takes the node's
// place in the cluster: a node with raft state rejoins its peers; a new
// one forms a one-node cluster (no --join, no --bootstrap-expect), joins
// the origins of --join (the leader makes it a voter), or forms a new
// cluster with the others of --bootstrap-expect. It waits for a leader;
// the leader makes sure the installation has an administrator.
func (o *Origin) startRaft(ctx context.Context) error {
	single := o.cfg.Join == "" && o.cfg.BootstrapExpect <= 1
	var err error
	// The metrics begin with the log: how long each command takes to
	// apply, snapshots, leader changes, and raft's own figures.
	o.metrics = metrics.New()
	o.store.Observe = func(c meta.Command, d time.Duration) {
		o.metrics.Raft.Apply.WithLabelValues(meta.CommandName(c)).Observe(d.Seconds())
	}
	machine := fsm.New(o.store)
	machine.Snapshotted = func(d time.Duration) { o.metrics.Raft.Snapshot.Observe(d.Seconds()) }
	machine.Unapplicable = func(index uint64, err error) {
		// Applying nothing more is the only way not to fork from the
		// others; the process ends, saying what to do.
		o.log.Error("this origin cannot apply the cluster's log: it runs an older Depot than the origin that wrote it; upgrade it and start it again",
			"index", index, "err", err, "version", version.Version)
		fmt.Fprintf(os.Stderr, "depot origin: log entry %d was written by a newer Depot (%v); upgrade this origin (version %s) and start it again\n",
			index, err, version.Version)
		os.Exit(3)
	}
	o.node, err = raftnode.New(raftnode.Config{
		NodeID: o.nodeID, BindAddr: o.cfg.RaftAddr, Dir: filepath.Join(o.cfg.DataDir, "raft"), Bootstrap: single, Key: o.key, Logger: o.log,
		HeartbeatTimeout: o.cfg.RaftTimeout, ElectionTimeout: o.cfg.RaftTimeout,
	}, machine)
	if err != nil {
		return err
	}
	if o.cfg.GossipAddr == "" {
		// Alone by its settings: not if its raft log says otherwise.
		if servers, err := o.node.Servers(); err == nil && len(servers) > 1 {
			return fmt.Errorf("this origin is a member of a cluster of %d origins (its raft log says so), but it was started without "+
				"--gossip-addr (DEPOT_GOSSIP_ADDR): start it with the --raft-addr and --gossip-addr it had in the cluster", len(servers))
		}
	}
	// A write arriving here is decided here and committed through the
	// leader, waiting out an election's worth of time without one.
	o.peers = leader.PeerClient(o.node)
	o.forward = leader.NewForwarding(o.node, o.store, o.electionWait(), o.peers)
	o.commit = o.forward
	o.blobs = blobs.New(blobs.Config{Self: o.nodeID, Local: o.local, Members: blobs.Raft(o.node), Peers: o.peers,
		Placement: o.placement(), MaxSize: o.cfg.MaxUploadBytes, Referenced: o.referencedBlobs,
		ReferencedSince: o.referencedSince, Applied: o.store.LastApplied, Grace: o.cfg.GCGrace,
		Now: o.now, Log: o.log})
	backupWork := filepath.Join(o.cfg.DataDir, "backup-work")
	_ = os.RemoveAll(backupWork) // what a stopped backup or restore left
	o.backups = backup.New(backup.Config{Store: o.store, Commit: o.commit, Blobs: o.blobs, Node: o.nodeID, WorkDir: backupWork,
		Version: version.Version, Log: o.log.With("component", "backup"), Now: o.now, LastIndex: o.node.Raft.LastIndex, NewID: auth.NewID,
		Schedule: func() (time.Duration, int, bool) {
			v := o.app.Settings()
			return time.Duration(v.BackupIntervalHours) * time.Hour, int(v.BackupKeep), v.BackupIncludeArtifacts
		},
		Export: func() string { return o.app.Settings().BackupExportDirectory },
		Restore: func(index uint64, size int64, r io.Reader) error {
			return o.node.Raft.Restore(&raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: index, Size: size}, r, time.Hour)
		}})
	o.servePeers()
	if err := o.startMembership(ctx); err != nil {
		return err
	}
	// A command some voter's build does not know is refused until every
	// origin runs one that does (a rolling upgrade).
	o.node.SetGate(leader.Gate(o.node, o.pool.Members))
	loopCtx, stop := context.WithCancel(context.Background())
	var loop sync.WaitGroup
	loop.Go(func() { o.clusterLoop(loopCtx) })
	o.stopLoop = func() { stop(); loop.Wait() }
	if o.cfg.BootstrapExpect > 1 {
		if err := o.expectBootstrap(ctx); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := o.node.WaitLeader(ctx); err != nil {
		return err
	}
	if !o.node.IsLeader() {
		return nil // the leader sees to the administrator
	}
	if err := o.node.Barrier(30 * time.Second); err != nil {
		return err
	}
	if backup.HasPending(o.cfg.DataDir) {
		// depot admin restore prepared this data directory: its metadata
		// becomes the new cluster's before anything else is written.
		o.log.Info("restoring the metadata depot admin restore unpacked")
		id, err := o.backups.RestorePending(context.WithoutCancel(ctx), o.cfg.DataDir)
		if err != nil {
			return fmt.Errorf("restoring backup %s at the first start: %w (the data directory is left as it is: fix the cause and start again)", id, err)
		}
		fmt.Fprintf(o.out, "Restored backup %s: its users, repositories and artifacts are this cluster's.\n", id)
	}
	return o.ensureAdmin(ctx, o.commit)
}

// serve builds the services and the HTTP handler: authentication, the
// formats' read and write environments, the REST API, garbage
// collection, metrics and the middleware around them.
func (o *Origin) serve(context.Context) error {
	cfg, log, now := o.cfg, o.log, o.now
	m := o.metrics
	// The whole data directory (raft log, metadata, blobs, upload
	// sessions) is one filesystem's worth: uploads stop while it still has
	// MinFreeBytes, so the raft log never runs out.
	o.space = diskspace.New(diskspace.Config{Dir: cfg.DataDir, MinFree: cfg.MinFreeBytes, Stat: cfg.Statfs, Now: now})
	if st := o.space.Status(); len(st.Reasons) > 0 {
		log.Warn("storage is degraded: uploads are refused until space is freed", "reasons", st.Reasons,
			"free_bytes", st.Free, "min_free_bytes", st.MinFree)
	}
	jwt := auth.NewJWT(o.secret, now)
	proxies, err := httpx.ParseProxies(cfg.TrustedProxies)
	if err != nil {
		return err
	}
	hasher := auth.NewHasher(0)
	hasher.Params = cfg.PasswordParams
	authn := &auth.Authenticator{Meta: o.store, JWT: jwt, Cache: auth.NewCredCache(time.Minute, 10000, now), Now: now,
		Hasher: hasher, Guard: auth.NewGuard(int(cfg.RateLimitLogin), int(cfg.AuthFailures), cfg.RateWindow, now),
		OnFailure: func(ctx context.Context, f auth.Failure) {
			m.AuthFailures.WithLabelValues(f.Reason).Inc()
			o.audit.Record(audit.Event{Time: now().UTC(), Actor: cmp.Or(f.Username, "anonymous"), Action: "auth." + f.Scheme,
				Remote: f.Remote, Via: auth.NodeOf(ctx), Outcome: "failure", Reason: f.Reason, RequestID: httpx.RequestID(ctx)})
		}}
	// Downloads are events too, recorded in batches off the hot path.
	o.events = events.New(o.commit, cfg.Webhooks.QueueSize, log.With("component", "events"), m.Events.Dropped.WithLabelValues("queue_full"))
	o.recordDownloads = events.NewGate(o.store, cfg.Webhooks.LogDownloads)
	o.webhooks = webhooks.NewQueue(cfg.Webhooks, o.store, o.commit, now, auth.NewID, log.With("component", "webhooks"), &m.Events)
	env := &format.Env{Meta: o.store, Now: now, Tokens: authn,
		OnDownload: func(r *format.Request, a *meta.Artifact) {
			o.downloads.Add()
			o.seen.Add(a.ID)
			o.recordDownload(r, a)
		},
		Advisories: func(ctx context.Context) (*vuln.DB, error) { db, _, err := o.scans.Database(ctx); return db, err },
		Admit:      o.admitDownloads(now)}
	scratch := filepath.Join(cfg.DataDir, "scratch")
	// Writes store new blobs on a quorum of the origins before they
	// commit; readers see the blobs of every origin (one not here yet is
	// fetched from a peer); garbage collection and upload sessions are
	// this origin's own (cluster/blobs).
	writer := &format.Writer{Env: env, Blobs: o.blobs, Commit: o.commit, NewID: auth.NewID, MaxUpload: cfg.MaxUploadBytes,
		ScratchDir: scratch, Ingest: o.blobs, Space: o.space,
		OnUploaded: func(format string, n int) { m.Uploads.WithLabelValues(format).Add(float64(n)) }}
	o.gc = gc.New(gc.Config{Meta: o.store, Blobs: o.blobs, Uploads: o.blobs, UploadTTL: oci.SessionTTL, Scratch: scratch,
		Grace: cfg.GCGrace, Now: now, Log: log.With("component", "gc"), Metrics: &m.GC,
		Stored: func() int64 { n, _, _ := o.local.Usage(); return n }})
	formats := all.Build(env)
	if cfg.Formats != nil {
		formats = formats[:0]
		for _, mk := range cfg.Formats {
			formats = append(formats, mk(env))
		}
	}
	// Keyed by every repository format served: the API refuses
	// repositories of a format no handler serves.
	byName := format.ByRepoFormat(formats)
	o.indexer = indexer.New(indexer.Config{Store: o.store, Commit: o.commit, Blobs: o.blobs, Formats: byName,
		Log: log.With("component", "search"), Metrics: &m.Search, Now: now})
	for name := range byName {
		m.Uploads.WithLabelValues(name) // each served format's count starts at 0
	}
	dir, err := cfg.LDAP.directory()
	if err != nil {
		return err
	}
	policy, err := cfg.LDAP.policy()
	if err != nil {
		return err
	}
	sso, err := cfg.OIDC.provider(o.secret)
	if err != nil {
		return err
	}
	ssoPolicy, err := cfg.OIDC.policy()
	if err != nil {
		return err
	}
	o.retention = retention.New(retention.Config{Store: o.store, Commit: o.commit, Formats: byName, Now: now,
		Log: log.With("component", "retention"), Metrics: &m.Retention,
		Default: func() (meta.Retention, time.Duration) {
			v := o.app.Settings()
			return v.Retention(), time.Duration(v.RetentionIntervalHours) * time.Hour
		},
		Delete: func(ctx context.Context, repo *meta.Repository, a *meta.Artifact) error {
			ctx = meta.WithActor(ctx, meta.Actor{Username: "retention"}, now())
			_, err := writer.DeleteThrough(ctx, byName[repo.Format], &format.Request{Repo: repo, Principal: auth.Job("retention")}, a)
			return err
		}})
	o.scans = o.newScans(byName, now, log)
	writer.Screen = o.screenUploads(now)
	application := &app.App{
		Store: o.store, Commit: o.commit, Blobs: o.blobs, Authn: authn, Hasher: authn.Hasher,
		Formats: byName, Env: env, Writer: writer, Now: now, NewID: auth.NewID,
		AccessTTL: cfg.AccessTTL, RefreshTTL: cfg.RefreshTTL, SettingsSource: cfg.settingsSource(), RequireHTTPS: cfg.RequireHTTPS,
		Webhooks: o.webhooks, BackupJobs: o.backups, Downloads: clusterDownloads{o}, EventLog: eventLog{o.events, o.recordDownloads}, GC: o.gc, Retention: o.retention, Scans: o.scans, Cluster: originCluster{o},
		Directory: policy, OIDCPolicy: ssoPolicy, Sealer: o.sealer,
	}
	if sso != nil {
		application.OIDC = oidcFlow{sso}
		log.Info("single sign-on on: GET /api/v1/auth/oidc/login signs users in with the OpenID provider", "issuer", cfg.OIDC.Issuer)
	}
	o.app = application
	// The webhooks.* settings, changed at run time, over the flags'.
	o.webhooks.SetOverlay(func(c webhooks.Config) webhooks.Config {
		v := application.Settings()
		c.Enabled, c.Timeout, c.MaxRetries = v.WebhooksEnabled, time.Duration(v.WebhookTimeoutSeconds)*time.Second, int(v.WebhookMaxRetries)
		c.Backoff, c.RateLimit = v.WebhookRetryBackoff, int(v.WebhookRateLimit)
		return c
	})
	if dir != nil {
		authn.Directory, authn.Provision = ldapDirectory{dir}, application.ProvisionDirectoryUser
		o.directory, o.directorySync = dir, progress.New("directory_sync", log.With("component", "ldap"))
		application.DirectoryInfo = func() *app.LDAPStatus {
			return &app.LDAPStatus{URL: cfg.LDAP.URL, BaseDN: cfg.LDAP.BaseDN, SyncIntervalSeconds: int64(cfg.LDAP.SyncInterval / time.Second),
				Sync: o.directorySync.Status()}
		}
		log.Info("directory sign-in on: passwords of users not kept here are checked with LDAP", "url", cfg.LDAP.URL,
			"base_dn", cfg.LDAP.BaseDN, "start_tls", cfg.LDAP.StartTLS)
	}
	apiSrv := api.New(api.Config{DemoMode: cfg.DemoMode, CORSOrigins: splitList(cfg.CORSOrigins)}, api.Deps{App: application, Audit: o.audit, Log: log, Health: o.health,
		BrowserSignIn: func(w http.ResponseWriter, r *http.Request, pair *app.TokenPair, next string, err error) {
			o.ui.SignedIn(w, r, pair, next, err)
		}})
	o.registerMetrics(application)
	uiKey := hmac.New(sha256.New, o.secret)
	uiKey.Write([]byte("depot web ui key"))
	if o.ui, err = webui.New(webui.Deps{App: application, Key: uiKey.Sum(nil), Log: log.With("area", "ui"),
		SignIn: apiSrv.SignIn, BeginSSO: apiSrv.BeginSSO, OpenAPI: apiSrv.OpenAPI(), Version: version.Version}); err != nil {
		return err
	}

	o.api = apiSrv
	mux := http.NewServeMux()
	mux.Handle(api.Prefix+"/", httpx.BodyDeadline(apiSrv, cfg.BodyTimeout))
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.Handle("GET /pks/lookup", api.KeyServer(application))
	areas := map[string]string{}
	servers := map[string]*format.Server{} // by repository format
	newServer := func(f format.Format) *format.Server {
		srv := format.NewServer(f, env, writer, authn, log)
		srv.OnWrite = apiSrv.AuditFormatWrite
		return srv
	}
	guard := func(h http.Handler) http.Handler {
		h = httpx.MinRate(h, cfg.MinUploadRate, cfg.UploadRateWindow)
		if cfg.DemoMode {
			h = readOnly(h)
		}
		return h
	}
	for _, f := range formats {
		srv := newServer(f)
		for _, rf := range format.RepoFormats(f) {
			servers[rf] = srv
		}
		for _, prefix := range format.Prefixes(f) {
			mux.Handle(prefix+"/", guard(httpx.NewFormatHandler(srv, prefix, o.blobs)))
			areas[prefix] = f.Name()
		}
	}
	plugins, err := o.newPlugins(env, newServer, log)
	if err != nil {
		return err
	}
	application.PluginHost = plugins
	// Migrations write through the format servers, as the administrator
	// who made them.
	o.migrator = o.newMigrator(application, servers, scratch, now, log)
	application.Migrator = o.migrator
	o.signer = signer.New(signer.Config{Store: o.store, Commit: o.commit, Log: log.With("component", "signer"),
		Sign: func(ctx context.Context, a *meta.Artifact, keyID string) (meta.Signature, error) {
			base := ""
			if b := o.baseURL.Load(); b != nil {
				base = *b
			}
			return application.UploadSignature(ctx, a, keyID, base)
		}})
	mux.Handle(webui.Prefix+"/", httpx.BodyDeadline(o.ui, cfg.BodyTimeout))
	// The installed plugins' paths, then nothing.
	mux.Handle("/", o.servePlugins(plugins, guard, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			http.Redirect(w, r, webui.Prefix+"/", http.StatusFound) // a person at the server's address: the web UI
			return
		}
		apierr.Write(w, apierr.New(apierr.NotFound, "nothing is served at %s; the API is under %s and the web UI under %s/", r.URL.Path, api.Prefix, webui.Prefix))
	})))
	// Forwarded goes outside: the access log and everything below it see
	// the client address and base URL it decided.
	// An edge node forwards with its credential: it says who the client
	// is and which base URL it used.
	proxies.Forwarder = func(credential string) string {
		if p, err := authn.EdgeToken(credential); err == nil {
			return p.Edge()
		}
		return ""
	}
	// What a client does through an edge node counts against the node too
	// (auth.Guard).
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if node := httpx.ForwardedBy(r); node != "" {
			r = r.WithContext(auth.ThroughNode(r.Context(), node))
		}
		if e := uncleanAPIPath(r.URL.Path); e != nil {
			apierr.Write(w, e) // JSON, not the mux's HTML redirect
			return
		}
		mux.ServeHTTP(w, r)
	})
	h = o.freshness(h)
	if cfg.RequireHTTPS {
		h = requireHTTPS(h)
	}
	o.handler = httpx.Forwarded(httpx.Observe(h, log, m, func(r *http.Request) string {
		p := r.URL.Path
		if strings.HasPrefix(p, api.Prefix+"/") {
			return "api"
		}
		if i := strings.IndexByte(p[1:], '/'); i > 0 {
			if a, ok := areas[p[:i+1]]; ok {
				return a
			}
		}
		return "other"
	}), proxies, cfg.ExternalURL)
	return nil
}

// splitList splits a comma-separated setting, dropping empty items.
// uncleanAPIPath refuses, in the API's own words, an API path the mux
// would answer with an HTML redirect: the prefix alone, or a path with
// empty, "." or ".." segments.
func uncleanAPIPath(p string) *apierr.Error {
	if p == api.Prefix {
		return apierr.New(apierr.NotFound, "no API endpoint at %s; the endpoints are under %s/, e.g. %s/health", p, p, p)
	}
	if !strings.HasPrefix(p, api.Prefix+"/") {
		return nil
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean != p {
		return apierr.New(apierr.NotFound, "no API endpoint at %s; did you mean %s?", p, clean)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readOnly refuses format writes in demo mode, like the API does.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			apierr.Write(w, apierr.New(apierr.DemoMode, "this is a demo instance: only reads are allowed"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Handler is the origin's HTTP handler (tests mount it on httptest).
func (o *Origin) Handler() http.Handler { return o.handler }

// Run serves on ln until ctx ends, then shuts down gracefully. The caller
// binds ln before New, so a taken port fails before the data directory
// (and a generated admin password nobody would see again) is created.
func (o *Origin) Run(ctx context.Context, ln net.Listener) error {
	defer o.close()
	defer ln.Close()
	srv := &http.Server{Handler: o.handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if o.cfg.TLSCert != "" {
		// Loaded once more than check did: a certificate renewed on disk
		// since is taken at the next start.
		cert, err := tls.LoadX509KeyPair(o.cfg.TLSCert, o.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	srv.RegisterOnShutdown(o.api.Drain) // long polls answer now rather than hold the shutdown up
	srv.RegisterOnShutdown(o.ui.Drain)
	abs, _ := filepath.Abs(o.cfg.DataDir)
	o.log.Info("depot origin started", "listen", ln.Addr().String(), "data_dir", abs, "node_id", o.nodeID,
		"raft_addr", o.node.Addr(), "gossip_addr", o.pool.Addr(), "version", version.Version, "gc_interval", o.cfg.GCInterval.String(), "gc_grace", o.cfg.GCGrace.String())
	base := strings.TrimSuffix(o.cfg.ExternalURL, "/")
	if base == "" {
		base = scheme + "://" + o.reachableAt(ln.Addr())
		if o.pool != nil {
			o.pool.Update(func(m *membership.Meta) { m.APIURL = base })
		}
	}
	o.baseURL.Store(&base)
	leaderID, _ := o.node.Leader()
	gossip := "gossip on " + o.pool.Addr()
	if o.cfg.GossipAddr == "" {
		gossip = "no gossip (an origin alone; to make it a cluster's first member, start it with --raft-addr and --gossip-addr)"
	}
	fmt.Fprintf(o.out, "Depot origin %s listening on %s://%s (API at %s://%s%s)\n  data directory: %s\n  node id: %s, raft on %s, %s\n  cluster: %d voter(s), leader %s\n",
		version.Version, scheme, ln.Addr(), scheme, ln.Addr(), api.Prefix, abs, o.nodeID, o.node.Addr(), gossip, o.node.Voters(), leaderID)
	if o.cfg.DemoMode {
		o.log.Warn("demo mode is on: every write is refused except login, refresh, logout and a pending initial password change")
		fmt.Fprint(o.out, "  demo mode: every write is refused (403 DEMO_MODE) except login, refresh, logout\n"+
			"             and the initial password change\n")
	}
	if admin, err := o.serveAdmin(); err != nil {
		o.log.Warn("no admin socket: 'depot admin reset-password' works only while the origin is stopped", "err", err)
	} else {
		defer func() { // before o.close: a reset in flight still needs the store
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = admin.Shutdown(sctx)
		}()
	}
	// Background work ends before o.close closes the store under it.
	var bg sync.WaitGroup
	defer bg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	bg.Go(func() { o.gc.Every(ctx, o.cfg.GCInterval) })
	bg.Go(func() { o.blobs.RepairLoop(ctx) })
	bg.Go(func() {
		// The blob count and bytes metrics start from a walk of the store.
		if err := o.local.Count(ctx); err != nil && ctx.Err() == nil {
			o.log.Warn("counting the stored blobs", "err", err)
		}
	})
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// leaderJobs is the work done once in the cluster, by its leader
// (leader.Loop moves it with the leadership): creating the initial
// administrator, should the origin that formed the cluster have died
// before it did, purging expired sessions, webhook deliveries, the search
// indexer, backups, the scheduled retention rules and security scans.
// Garbage collection is not
// among them: it sweeps this origin's own disk and commits nothing, so
// every origin runs its own.
func (o *Origin) leaderJobs(ctx context.Context) {
	if err := o.ensureAdmin(ctx, o.commit); err != nil && !errors.Is(err, meta.ErrConflict) && ctx.Err() == nil {
		o.log.Warn("creating the initial administrator", "err", err)
	}
	var jobs sync.WaitGroup
	defer jobs.Wait()
	jobs.Go(func() { o.webhooks.Run(ctx) })
	jobs.Go(func() { o.indexer.Run(ctx) })
	jobs.Go(func() { o.backups.Run(ctx) })
	jobs.Go(func() { o.retention.Run(ctx) })
	jobs.Go(func() { o.scans.Run(ctx) })
	jobs.Go(func() { o.migrator.Run(ctx) })
	jobs.Go(func() { o.signer.Run(ctx) })
	jobs.Go(func() { o.syncDirectory(ctx, o.app) })
	o.purgeSessions(ctx, time.Hour)
}

// recordDownload queues the artifact.downloaded event of a download,
// while downloads are recorded.
func (o *Origin) recordDownload(r *format.Request, a *meta.Artifact) {
	if !o.recordDownloads.Open() {
		return
	}
	repo := r.Repo
	if repo == nil || repo.ID != a.RepositoryID {
		if err := o.store.View(func(tx *meta.Tx) error { var err error; repo, err = tx.Repo(a.RepositoryID); return err }); err != nil {
			return // the repository went meanwhile
		}
	}
	who := r.Principal.Actor()
	who.IPAddress = r.RemoteAddr
	o.events.Add(meta.DownloadEvent(a, repo, who, o.now()))
}

// maxBlobCopies bounds --blob-copies: more than any cluster has voters.
const maxBlobCopies = 99

// placement is where blobs live: --blob-copies origins, or every one.
func (o *Origin) placement() blobs.Placement {
	if o.cfg.BlobCopies > 0 {
		return blobs.Copies(int(o.cfg.BlobCopies))
	}
	return blobs.Everywhere{}
}

// eventLog takes the download events edge nodes report (app.EventSink).
type eventLog struct {
	*events.Recorder
	gate *events.Gate
}

func (l eventLog) RecordingDownloads() (bool, time.Time) { return l.gate.Since() }

// purgeSessions drops expired login sessions now and then, so the store
// does not grow with every login forever.
func (o *Origin) purgeSessions(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		if _, err := o.commit.Apply(ctx, &meta.SessionPurge{Before: o.now().UTC()}); err != nil {
			o.log.Warn("purging expired sessions", "err", err)
		}
	})
}

// every runs fn each interval until ctx ends: the origin's periodic jobs.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// startJobs starts the work every origin does in the background from its
// start to its close: the leader's jobs, while it leads, and recording
// the download events it serves.
func (o *Origin) startJobs(context.Context) error {
	ctx, stop := context.WithCancel(context.Background())
	var jobs sync.WaitGroup
	jobs.Go(func() { leader.Loop(ctx, o.node, o.log, o.leaderJobs) })
	jobs.Go(func() { o.events.Run(ctx) })
	if o.node.IsLeader() {
		o.caughtUp.Store(true) // at once: its health is ok when New returns
	}
	jobs.Go(func() { o.catchUp(ctx) })
	jobs.Go(func() { o.reportDownloads(ctx) })
	o.stopJobs = func() { stop(); jobs.Wait() }
	return nil
}

func (o *Origin) close() {
	if o.stopJobs != nil { // while raft still takes their last writes
		o.stopJobs()
		o.stopJobs = nil
	}
	if o.stopLoop != nil {
		o.stopLoop()
		o.stopLoop = nil
	}
	o.leaveCluster()
	if o.directory != nil {
		o.directory.Close()
	}
	if o.blobs != nil { // pushes beyond a quorum: repair brings those blobs later
		o.blobs.Close()
	}
	if o.plugins != nil {
		_ = o.plugins.Close(context.Background())
		o.plugins = nil
	}
	if o.peerSrv != nil {
		_ = o.peerSrv.Close()
		o.peerSrv = nil
	}
	if o.node != nil {
		if err := o.node.Shutdown(); err != nil {
			o.log.Warn("raft shutdown", "err", err)
		}
		o.node = nil
	}
	if o.store != nil {
		o.store.Close()
		o.store = nil
	}
	if o.audit != nil {
		o.audit.Close()
		o.audit = nil
	}
}

// Close releases everything without serving (for tests that used Handler).
func (o *Origin) Close() { o.close() }

// ensureAdmin creates the default admin on a new installation. Its
// password must be changed before the account can do anything else.
func (o *Origin) ensureAdmin(ctx context.Context, commit leader.Applier) error {
	has := false
	if err := o.store.View(func(tx *meta.Tx) error { has = tx.HasUsers(); return nil }); err != nil || has {
		return err
	}
	pw, generated := o.cfg.AdminPassword, false
	if pw == "" {
		pw, generated = auth.RandomPassword(), true
	}
	hash, err := auth.HashPasswordWith(o.cfg.PasswordParams.OrDefault(), pw)
	if err != nil {
		return err
	}
	now := o.now().UTC()
	u := meta.User{ID: auth.NewID(), Username: "admin", Email: "admin@localhost", Role: meta.RoleAdmin,
		PasswordHash: hash, MustChangePassword: true, Source: "local", CreatedAt: now, UpdatedAt: now}
	if _, err := commit.Apply(ctx, &meta.UserCreate{User: u}); err != nil {
		return fmt.Errorf("create admin: %w", err)
	}
	if generated {
		fmt.Fprintf(o.out, "Created user 'admin' with the generated initial password: %s\n"+
			"  It must be changed at first login (PUT /api/v1/users/me with current_password and password).\n", pw)
	} else {
		fmt.Fprintf(o.out, "Created user 'admin' with the password from DEPOT_ADMIN_PASSWORD; it must be changed at first login.\n")
	}
	return nil
}

// reachableAt is the address peers and edges reach the API at: the one
// it listens on, or, listening on every interface (0.0.0.0), the raft
// address's host with the API's port.
func (o *Origin) reachableAt(listen net.Addr) string {
	a, ok := listen.(*net.TCPAddr)
	if !ok || !a.IP.IsUnspecified() {
		return listen.String()
	}
	host, _, err := net.SplitHostPort(o.node.Addr())
	if err != nil {
		return listen.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// requireHTTPS refuses (403) requests that did not come over HTTPS, but
// for health checks, which load balancers make over plain HTTP.
func requireHTTPS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpx.Secure(r) && !strings.HasPrefix(r.URL.Path, api.Prefix+"/health") {
			apierr.Write(w, apierr.New(apierr.Forbidden, "this registry requires HTTPS (REQUIRE_HTTPS): use https:// URLs"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
