package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/meta"
)

// Registry serves the installed plugins of a node: it follows the
// installed-plugin records of the node's store, loads each plugin's
// module from its blob (once per module, in the background) and finds
// the plugin that serves a request's path. Origins and edges each keep
// one.
type Registry struct {
	engine *Engine
	store  *meta.Store
	open   Opener
	// serve builds the node's format server for a plugin's format (its
	// authentication, its writer or none, its log).
	serve func(format.Format) *format.Server
	env   *format.Env
	log   *slog.Logger

	mu   sync.Mutex // one refresh at a time
	snap atomic.Pointer[snapshot]
	// inspected are modules Inspect compiled, by digest, for the load
	// that follows their install (compiling is the slow part).
	inspectedMu sync.Mutex
	inspected   map[string]inspectedModule
}

type inspectedModule struct {
	mod *Module
	at  time.Time
}

// keepInspected is how long a module Inspect compiled waits for its load.
const keepInspected = 2 * time.Minute

// Loaded is an installed plugin as a node serves it. Record is set when
// it is made; the rest once Ready is closed.
type Loaded struct {
	Record meta.InstalledPlugin
	Format *Format
	Server *format.Server
	// Err is why its module could not be loaded here (its paths are not
	// served here until it can).
	Err   error
	mod   *Module
	ready chan struct{}
	at    time.Time // when the load ended
}

// Ready is closed once the plugin's load ended, well or not.
func (l *Loaded) Ready() <-chan struct{} { return l.ready }

// done reports whether the load ended.
func (l *Loaded) done() bool {
	select {
	case <-l.ready:
		return true
	default:
		return false
	}
}

type snapshot struct {
	index uint64
	byID  map[string]*Loaded
}

// retryDue reports whether a load that failed is due to be tried again.
func (s *snapshot) retryDue() bool {
	for _, l := range s.byID {
		if l.done() && l.Err != nil && time.Since(l.at) >= retryLoad {
			return true
		}
	}
	return false
}

// retryLoad is how soon a module that failed to load is tried again;
// loadWait how long a request for a plugin waits for its module to load.
const (
	retryLoad = 10 * time.Second
	loadWait  = time.Minute
)

// errLoading is a plugin whose module is still loading.
var errLoading = errors.New("its module is loading")

// NewRegistry serves the plugins installed in store over env, loading
// modules with engine from open and serving them with serve.
func NewRegistry(engine *Engine, store *meta.Store, env *format.Env, open Opener, serve func(format.Format) *format.Server, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{engine: engine, store: store, env: env, open: open, serve: serve, log: log}
}

// wait waits, at most loadWait, for l's load to end; false when it has
// not (l's other fields are not to be read then).
func wait(ctx context.Context, l *Loaded) bool {
	if l.done() {
		return true
	}
	t := time.NewTimer(loadWait)
	defer t.Stop()
	select {
	case <-l.ready:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// Lookup finds the plugin serving path, and the prefix the path is under
// ("" for one of its roots), waiting for its module to load if it is
// loading: its Server is nil when it could not be loaded (Err says why).
func (g *Registry) Lookup(ctx context.Context, path string) (*Loaded, string, bool) {
	l, prefix, ok := g.match(ctx, path)
	if !ok {
		return nil, "", false
	}
	if !wait(ctx, l) {
		return &Loaded{Record: l.Record, Err: errLoading}, prefix, true
	}
	return l, prefix, true
}

// Claims reports whether an installed plugin serves path, loaded here or
// not (it does not wait for a load).
func (g *Registry) Claims(ctx context.Context, path string) bool {
	_, _, ok := g.match(ctx, path)
	return ok
}

// match finds the installed plugin serving path, and the prefix the path
// is under ("" for one of its roots).
func (g *Registry) match(ctx context.Context, path string) (*Loaded, string, bool) {
	for _, l := range g.current(ctx).byID {
		if p := l.Record.Prefix; path == p || strings.HasPrefix(path, p+"/") {
			return l, p, true
		}
		if slices.Contains(l.Record.Roots, path) {
			return l, "", true
		}
	}
	return nil, "", false
}

// current is the snapshot as of the store's last applied index.
func (g *Registry) current(ctx context.Context) *snapshot {
	idx := g.store.LastApplied()
	if s := g.snap.Load(); s != nil && s.index == idx && !s.retryDue() {
		return s
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.snap.Load()
	if s != nil && s.index == idx && !s.retryDue() {
		return s
	}
	next := g.refresh(ctx, s, idx)
	g.snap.Store(next)
	return next
}

// refresh starts loading what was installed or replaced since prev (or
// failed to load long enough ago) and drops what was uninstalled. It
// reads the records only: modules load in the background.
func (g *Registry) refresh(ctx context.Context, prev *snapshot, idx uint64) *snapshot {
	var recs []meta.InstalledPlugin
	err := g.store.View(func(tx *meta.Tx) error {
		if tx.Count(meta.KindPluginModule) == 0 {
			return nil
		}
		var err error
		recs, err = tx.InstalledPlugins()
		return err
	})
	old := map[string]*Loaded{}
	if prev != nil {
		old = prev.byID
	}
	if err != nil {
		g.log.Error("reading the installed plugins", "err", err)
		return &snapshot{index: idx - 1, byID: old} // read again on the next request
	}
	next := &snapshot{index: idx, byID: map[string]*Loaded{}}
	for _, rec := range recs {
		if l, ok := old[rec.ID]; ok && l.Record.Digest == rec.Digest && (!l.done() || l.Err == nil || time.Since(l.at) < retryLoad) {
			l2 := l
			if l.done() { // the record's other fields (its version) may have changed
				c := *l
				c.Record = rec
				l2 = &c
			}
			next.byID[rec.ID] = l2
			continue
		}
		l := &Loaded{Record: rec, ready: make(chan struct{})}
		go g.load(context.WithoutCancel(ctx), l)
		next.byID[rec.ID] = l
	}
	for id, l := range old {
		if n, ok := next.byID[id]; (!ok || n.Record.Digest != l.Record.Digest) && l.done() && l.mod != nil {
			go func() { // calls under way end first
				time.Sleep(g.engine.limits.Call + time.Second)
				l.mod.Close(context.Background())
			}()
		}
	}
	return next
}

// load reads a plugin's module from its blob, checks it is the module
// the record names, compiles it and builds its format server.
func (g *Registry) load(ctx context.Context, l *Loaded) {
	rec := l.Record
	defer func() {
		l.at = time.Now()
		if l.Err != nil {
			g.log.Warn("a plugin's module could not be loaded; its paths are not served here until it can", "plugin", rec.ID, "digest", rec.Digest, "err", l.Err)
		} else {
			g.log.Info("plugin loaded", "plugin", rec.ID, "version", rec.Version, "format", rec.Format, "prefix", rec.Prefix)
		}
		close(l.ready)
	}()
	var err error
	if l.mod = g.takeInspected(rec.Digest); l.mod == nil {
		var wasm []byte
		if wasm, err = g.readModule(ctx, rec.Digest); err == nil {
			l.mod, err = g.engine.Load(ctx, wasm)
		}
	}
	if err != nil {
		l.Err = err
		return
	}
	man, err := l.mod.Manifest(ctx)
	if err == nil && (man.ID != rec.ID || man.Format != rec.Format || man.Prefix != rec.Prefix) {
		err = fmt.Errorf("the module declares plugin %s (format %s under %s), not what was installed", man.ID, man.Format, man.Prefix)
	}
	if err != nil {
		l.mod.Close(ctx)
		l.mod, l.Err = nil, err
		return
	}
	l.Format = NewFormat(g.env, man, l.mod, g.open)
	l.Server = g.serve(l.Format)
}

func (g *Registry) readModule(ctx context.Context, digest string) ([]byte, error) {
	want, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return nil, fmt.Errorf("module digest %s is not sha256", digest)
	}
	f, err := g.open(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("opening the module: %w", err)
	}
	defer f.Close()
	wasm, err := io.ReadAll(io.LimitReader(f, int64(g.engine.limits.Module)+1))
	if err != nil {
		return nil, fmt.Errorf("reading the module: %w", err)
	}
	if sum := sha256.Sum256(wasm); hex.EncodeToString(sum[:]) != want {
		return nil, fmt.Errorf("the module's bytes are not those of %s", digest)
	}
	return wasm, nil
}

// MaxModule bounds a module's size.
func (g *Registry) MaxModule() int { return g.engine.limits.Module }

// Inspect loads a module to read its manifest, as installing it does
// first: a module this engine cannot load, or whose manifest is wrong,
// is refused before it is stored.
//
// The module it compiled is kept a while, for the load that follows.
func (g *Registry) Inspect(ctx context.Context, wasm []byte) (abi.Manifest, error) {
	mod, err := g.engine.Load(ctx, wasm)
	if err != nil {
		return abi.Manifest{}, err
	}
	man, err := mod.Manifest(ctx)
	if err != nil {
		mod.Close(context.WithoutCancel(ctx))
		return man, err
	}
	sum := sha256.Sum256(wasm)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	g.inspectedMu.Lock()
	defer g.inspectedMu.Unlock()
	if g.inspected == nil {
		g.inspected = map[string]inspectedModule{}
	}
	if m, ok := g.inspected[digest]; ok {
		m.mod.Close(context.Background())
	}
	at := time.Now()
	g.inspected[digest] = inspectedModule{mod: mod, at: at}
	// One whose install failed (or whose load never came) goes.
	time.AfterFunc(keepInspected, func() {
		g.inspectedMu.Lock()
		defer g.inspectedMu.Unlock()
		if m, ok := g.inspected[digest]; ok && m.at.Equal(at) {
			m.mod.Close(context.Background())
			delete(g.inspected, digest)
		}
	})
	return man, nil
}

// takeInspected is the module Inspect compiled for digest, if it kept it.
func (g *Registry) takeInspected(digest string) *Module {
	g.inspectedMu.Lock()
	defer g.inspectedMu.Unlock()
	m, ok := g.inspected[digest]
	if !ok {
		return nil
	}
	delete(g.inspected, digest)
	return m.mod
}

// FormatOf is the loaded plugin serving a repository format (waiting
// for it to load), or nil.
func (g *Registry) FormatOf(ctx context.Context, repoFormat string) format.Format {
	for _, l := range g.current(ctx).byID {
		if l.Record.Format == repoFormat && wait(ctx, l) && l.Format != nil {
			return l.Format
		}
	}
	return nil
}

// LoadError is why an installed plugin's module is not loaded here (nil:
// it is, or there is no such plugin).
func (g *Registry) LoadError(ctx context.Context, id string) error {
	l, ok := g.current(ctx).byID[id]
	switch {
	case !ok:
		return nil
	case !l.done():
		return errLoading
	}
	return l.Err
}
