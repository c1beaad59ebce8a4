package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
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
// module from its blob (once per module) and finds the plugin that
// serves a request's path. Origins and edges each keep one.
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
}

// Loaded is an installed plugin as a node serves it.
type Loaded struct {
	Record meta.InstalledPlugin
	Format *Format
	Server *format.Server
	// Err is why its module could not be loaded here (a 503 for its
	// paths until it can).
	Err error
	mod *Module
}

type snapshot struct {
	index  uint64
	byID   map[string]*Loaded
	failed time.Time // when a load last failed: retried after retryLoad
}

// retryLoad is how soon a module that failed to load is tried again.
const retryLoad = 10 * time.Second

// NewRegistry serves the plugins installed in store over env, loading
// modules with engine from open and serving them with serve.
func NewRegistry(engine *Engine, store *meta.Store, env *format.Env, open Opener, serve func(format.Format) *format.Server, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{engine: engine, store: store, env: env, open: open, serve: serve, log: log}
}

// Plugins are the installed plugins as this node serves them, by id.
func (g *Registry) Plugins(ctx context.Context) map[string]*Loaded {
	return g.current(ctx).byID
}

// Lookup finds the plugin serving path: its server, and the prefix the
// path is under ("" for one of its roots).
func (g *Registry) Lookup(ctx context.Context, path string) (*Loaded, string, bool) {
	for _, l := range g.current(ctx).byID {
		if p := l.Record.Prefix; path == p || strings.HasPrefix(path, p+"/") {
			return l, p, true
		}
		for _, root := range l.Record.Roots {
			if path == root {
				return l, "", true
			}
		}
	}
	return nil, "", false
}

// current is the snapshot as of the store's last applied index.
func (g *Registry) current(ctx context.Context) *snapshot {
	idx := g.store.LastApplied()
	s := g.snap.Load()
	if s != nil && s.index == idx && (s.failed.IsZero() || time.Since(s.failed) < retryLoad) {
		return s
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if s = g.snap.Load(); s != nil && s.index == idx && (s.failed.IsZero() || time.Since(s.failed) < retryLoad) {
		return s
	}
	next := g.refresh(ctx, s, idx)
	g.snap.Store(next)
	return next
}

// refresh loads what was installed or replaced since prev and drops what
// was uninstalled.
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
	next := &snapshot{index: idx, byID: map[string]*Loaded{}}
	if err != nil {
		g.log.Error("reading the installed plugins", "err", err)
		next.failed = time.Now()
		if prev != nil {
			next.byID = prev.byID
		}
		return next
	}
	old := map[string]*Loaded{}
	if prev != nil {
		old = prev.byID
	}
	for _, rec := range recs {
		if l, ok := old[rec.ID]; ok && l.Record.Digest == rec.Digest && l.Err == nil {
			l2 := *l
			l2.Record = rec
			next.byID[rec.ID] = &l2
			continue
		}
		l := g.load(context.WithoutCancel(ctx), rec)
		if l.Err != nil {
			g.log.Warn("a plugin's module could not be loaded; its paths answer 503 until it can", "plugin", rec.ID, "digest", rec.Digest, "err", l.Err)
			next.failed = time.Now()
		} else {
			g.log.Info("plugin loaded", "plugin", rec.ID, "version", rec.Version, "format", rec.Format, "prefix", rec.Prefix)
		}
		next.byID[rec.ID] = l
	}
	for id, l := range old {
		if n, ok := next.byID[id]; (!ok || n.mod != l.mod) && l.mod != nil {
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
func (g *Registry) load(ctx context.Context, rec meta.InstalledPlugin) *Loaded {
	l := &Loaded{Record: rec}
	wasm, err := g.readModule(ctx, rec.Digest)
	if err == nil {
		l.mod, err = g.engine.Load(ctx, wasm)
	}
	if err != nil {
		l.Err = err
		return l
	}
	man, err := l.mod.Manifest(ctx)
	if err == nil && (man.ID != rec.ID || man.Format != rec.Format || man.Prefix != rec.Prefix) {
		err = fmt.Errorf("the module declares plugin %s (format %s under %s), not what was installed", man.ID, man.Format, man.Prefix)
	}
	if err != nil {
		l.mod.Close(ctx)
		l.mod, l.Err = nil, err
		return l
	}
	l.Format = NewFormat(g.env, man, l.mod, g.open)
	l.Server = g.serve(l.Format)
	return l
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
func (g *Registry) Inspect(ctx context.Context, wasm []byte) (abi.Manifest, error) {
	mod, err := g.engine.Load(ctx, wasm)
	if err != nil {
		return abi.Manifest{}, err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	return mod.Manifest(ctx)
}

// FormatOf is the loaded plugin serving a repository format, or nil.
func (g *Registry) FormatOf(ctx context.Context, repoFormat string) format.Format {
	for _, l := range g.current(ctx).byID {
		if l.Record.Format == repoFormat && l.Format != nil {
			return l.Format
		}
	}
	return nil
}

// LoadError is why an installed plugin's module is not loaded here (nil:
// it is, or there is no such plugin).
func (g *Registry) LoadError(ctx context.Context, id string) error {
	if l, ok := g.current(ctx).byID[id]; ok {
		return l.Err
	}
	return nil
}
