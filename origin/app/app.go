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
	"time"

	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// App holds what the use cases need.
type App struct {
	Store   *meta.Store
	Commit  meta.Committer
	Hasher  *auth.Hasher             // passwords
	Formats map[string]format.Format // by repository format
	Writer  *format.Writer           // formats' write environment (deletes)
	Now     func() time.Time
	NewID   func() string
	// UsersCreateRepo lets role "user" create repositories.
	UsersCreateRepo bool
	// RequireHTTPS refuses webhook URLs that are not https.
	RequireHTTPS bool
	// WebhooksOff says whether webhook deliveries are disabled (manual
	// deliveries are refused then). Nil: they are on.
	WebhooksOff func() bool
	// Downloads counts the last day's downloads (nil: none counted).
	Downloads func() int64
	// GC collects garbage (nil: not on this node).
	GC *gc.Collector
}

// commit stamps c with the actor in ctx and commits it.
func (a *App) commit(ctx context.Context, c meta.Command) (uint64, error) {
	meta.Stamp(ctx, c)
	return a.Commit.Apply(ctx, c)
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

// window bounds [from, to) of the page in a listing of n.
func (pg Page) window(n int) (int, int) {
	from := min((pg.Number-1)*pg.Limit, n)
	return from, min(from+pg.Limit, n)
}

// Listing is one page of a listing and the listing's total.
type Listing[T any] struct {
	Items []T
	Total int
	Page  Page
}
