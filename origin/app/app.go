// Package app is Depot's application layer: every operation on its
// resources (repositories, users, API tokens, groups, permissions...) as a
// plain function of a context, the principal asking and an input, to an
// output and an error, whoever asks: the REST API (origin/api), and the
// web UI, the admin CLI, importers and directory sync to come. A use case
// validates its input, decides who may do it, reads the store and commits
// the command; the transports decode, call and encode. Errors are the
// client errors of shared/apierr, or store errors the transports map
// (format.Domain).
//
// One file per resource. Writes return the log index of their command,
// which a transport may give its client (X-Depot-Index: read your write
// at any node).
package app

import (
	"context"
	"net/netip"
	"time"

	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/origin/service/migrate"
	"github.com/depot-registry/depot/origin/service/retention"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/origin/service/webhooks"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/settings"
	"github.com/depot-registry/depot/shared/signing"
)

// App holds what the use cases need. Nil optional parts turn their
// features off, as their comments say.
type App struct {
	Store  *meta.Store
	Commit meta.Committer
	Blobs  blob.Store          // the artifacts' bytes
	Authn  *auth.Authenticator // sign-in (its JWT issues login sessions' tokens), and the checks edge nodes ask for
	Hasher *auth.Hasher        // passwords
	// Formats are the format handlers by repository format; Env and
	// Writer their read and write environments (downloads, deletes).
	Formats map[string]format.Format
	Env     *format.Env
	Writer  *format.Writer
	Now     func() time.Time
	NewID   func() string

	// AccessTTL and RefreshTTL are the lifetimes of a login session's
	// access token and of the session (its refresh token).
	AccessTTL, RefreshTTL time.Duration
	// SettingsSource is where the run-time settings come from besides
	// the store: this origin's flags, which of them fix a setting, and
	// the defaults (Settings).
	SettingsSource settings.Source
	live           liveSettings
	// RequireHTTPS refuses webhook URLs that are not https.
	RequireHTTPS bool
	// LookupHost resolves a webhook's host name (the system's resolver
	// when nil).
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)

	// Webhooks is the delivery loop, whose settings the webhook use cases
	// read (nil: deliveries on, default timeout).
	Webhooks *webhooks.Queue
	// Downloads counts downloads (nil: none counted).
	Downloads Downloads
	// EventLog takes edge nodes' download events (nil: not recorded).
	EventLog EventSink
	// BackupJobs is the leader's backup service (nil: none woken).
	BackupJobs BackupJobs
	// GC collects garbage (nil: not on this node).
	GC *gc.Collector
	// Retention applies the retention rules (nil: not on this node).
	Retention *retention.Service
	// Scans is the scanner and its advisory database (nil: none).
	Scans *scan.Service
	// Sealer seals and opens signing keys' private parts with the
	// key-encryption key (nil: none given; no key can be made or used).
	Sealer *signing.Sealer
	// Migrator runs migrations from other registries (nil: none).
	Migrator *migrate.Service
	// PluginHost loads and serves the installed plugins (nil: none).
	PluginHost PluginHost
	// Cluster is the origin cluster (nil: a lone origin).
	Cluster Cluster
	// Directory is how directory (LDAP) users become Depot users;
	// DirectoryInfo gives the directory's settings and this origin's sync
	// progress (nil: no directory).
	Directory     DirectoryPolicy
	DirectoryInfo func() *LDAPStatus
	// OIDC is the identity provider users sign in with (nil: none), and
	// OIDCPolicy how its users become Depot users.
	OIDC       OIDC
	OIDCPolicy DirectoryPolicy

	nodes nodeBudgets
}

// Downloads counts downloads for the downloads_24h statistic: AddN takes
// an edge node's count; Last24h is the whole cluster's. Seen takes an
// artifact an edge node served, for its last download day.
type Downloads interface {
	AddN(n int64)
	Last24h() int64
	Seen(artifactID string)
}

// commit stamps c with the actor in ctx and commits it.
func (a *App) commit(ctx context.Context, c meta.Command) (uint64, error) {
	meta.Stamp(ctx, c)
	return a.Commit.Apply(ctx, c)
}

// decide reads, decides and commits (meta.Decide): fn reads what the
// decision rests on (the caller's grants, the records it changes) and
// returns the command, which carries those reads as its preconditions: a
// grant revoked or a record changed meanwhile is decided again, not
// acted on.
func (a *App) decide(ctx context.Context, fn func(tx *meta.Tx) (meta.Command, error)) (uint64, error) {
	return meta.Decide(ctx, a.Store, a.Commit, fn)
}

func (a *App) view(fn func(*meta.Tx) error) error { return a.Store.View(fn) }

func (a *App) now() time.Time { return a.Now().UTC() }

// requireAdmin refuses anyone but a global administrator.
func requireAdmin(p *auth.Principal) error {
	if !p.IsAdmin() {
		return apierr.New(apierr.Forbidden, "administrator access required")
	}
	return nil
}

// Page is which part of a listing to answer: 1-based Number, Limit items.
type Page struct {
	Number, Limit int
}

// DefaultPage is the first 20.
var DefaultPage = Page{Number: 1, Limit: 20}

// Bounds of a page: the items of one, and the page number.
const (
	MaxPageLimit  = 100
	MaxPageNumber = 1_000_000
)

// clamped is pg with its number in 1..MaxPageNumber and its limit in
// 1..MaxPageLimit (DefaultPage's when unset): what every listing answers.
func (pg Page) clamped() Page {
	if pg.Limit <= 0 {
		pg.Limit = DefaultPage.Limit
	}
	pg.Limit = min(pg.Limit, MaxPageLimit)
	pg.Number = min(max(pg.Number, 1), MaxPageNumber)
	return pg
}

// offset is the index of the clamped page's first item.
func (pg Page) offset() int {
	pg = pg.clamped()
	return (pg.Number - 1) * pg.Limit
}

// window bounds [from, to) of the clamped page in a listing of n.
func (pg Page) window(n int) (int, int) {
	from := min(pg.offset(), n)
	return from, min(from+pg.clamped().Limit, n)
}

// Listing is one page of a listing and the listing's total.
type Listing[T any] struct {
	Items []T
	Total int
	Page  Page
}
