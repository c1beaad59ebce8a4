package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/version"
)

// Plugins: every format handler is a plugin an administrator turns off
// (its client paths answer a refusal, at origins and at edges, with
// nothing it stores touched) and on again. An administrator installs
// more: format handlers compiled to WebAssembly (package plugin), whose
// module is stored as a blob and replicated, so that every origin and
// edge serves them.

// PluginHost loads and serves the installed plugins (plugin.Registry).
type PluginHost interface {
	// Inspect loads a module and answers its checked manifest.
	Inspect(ctx context.Context, wasm []byte) (abi.Manifest, error)
	// FormatOf is the loaded plugin serving a repository format, or nil.
	FormatOf(ctx context.Context, repoFormat string) format.Format
	// LoadError is why a plugin's module is not loaded on this node.
	LoadError(ctx context.Context, id string) error
	// MaxModule bounds a module's size.
	MaxModule() int
}

// ReservedPrefixes are the URL prefixes no plugin may take: the
// registry's own.
var ReservedPrefixes = []string{"/api", "/ui", "/metrics", "/pks", "/healthz", "/readyz", "/v2", "/replication", "/peer", "/-"}

// CapFormatHandler is the capability of a format handler.
const CapFormatHandler = "format_handler"

// Plugin is a plugin as answered.
type Plugin struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Enabled      bool     `json:"enabled"`
	Capabilities []string `json:"capabilities"`
	// Builtin: compiled into Depot (disabled, not uninstalled).
	Builtin bool `json:"builtin"`
	// Formats are the repository formats it serves; Prefixes its URL
	// prefixes.
	Formats   []string   `json:"formats"`
	Prefixes  []string   `json:"prefixes"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
	// An installed plugin's module (its blob), when and by whom it was
	// installed, and why this origin cannot load it, if it cannot.
	Module      *PluginModule `json:"module,omitempty"`
	InstalledAt *time.Time    `json:"installed_at,omitempty"`
	InstalledBy string        `json:"installed_by,omitempty"`
	LoadError   string        `json:"load_error,omitempty"`
}

// PluginModule is an installed plugin's WebAssembly module.
type PluginModule struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	ABI    int    `json:"abi"`
}

// handlers are the built-in format handlers, by name.
func (a *App) handlers() map[string]format.Format {
	out := map[string]format.Format{}
	for _, f := range a.Formats {
		out[f.Name()] = f
	}
	return out
}

func builtinPlugin(f format.Format, st *meta.PluginState) Plugin {
	p := Plugin{ID: f.Name(), Name: f.Name() + " format handler", Version: version.Version, Enabled: true,
		Capabilities: []string{CapFormatHandler}, Builtin: true, Formats: format.RepoFormats(f), Prefixes: format.Prefixes(f)}
	if st != nil {
		at := st.UpdatedAt
		p.Enabled, p.UpdatedAt, p.UpdatedBy = st.Enabled, &at, st.UpdatedBy
	}
	return p
}

// Plugins lists the plugins (administrators only), by id.
func (a *App) Plugins(ctx context.Context, p *auth.Principal) ([]Plugin, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	var states map[string]meta.PluginState
	if err := a.view(func(tx *meta.Tx) error { var err error; states, err = tx.PluginStates(); return err }); err != nil {
		return nil, err
	}
	var out []Plugin
	for name, f := range a.handlers() {
		var st *meta.PluginState
		if s, ok := states[name]; ok {
			st = &s
		}
		out = append(out, builtinPlugin(f, st))
	}
	installed, err := a.installedPlugins()
	if err != nil {
		return nil, err
	}
	for _, rec := range installed {
		var st *meta.PluginState
		if s, ok := states[rec.ID]; ok {
			st = &s
		}
		out = append(out, a.installedPlugin(ctx, rec, st))
	}
	slices.SortFunc(out, func(x, y Plugin) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// SetPlugin turns a plugin on or off (administrators only).
func (a *App) SetPlugin(ctx context.Context, p *auth.Principal, id string, enabled bool) (*Plugin, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	f, builtin := a.handlers()[id]
	var rec *meta.InstalledPlugin
	if !builtin {
		err := a.view(func(tx *meta.Tx) error { var err error; rec, err = tx.InstalledPlugin(id); return err })
		if errors.Is(err, meta.ErrNotFound) {
			return nil, 0, apierr.New(apierr.NotFound, "no plugin %s (GET /api/v1/plugins lists them)", id)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	st := meta.PluginState{ID: id, Enabled: enabled, UpdatedAt: a.now(), UpdatedBy: p.Name()}
	idx, err := a.commit(ctx, &meta.PluginSet{State: st})
	if err != nil {
		return nil, idx, err
	}
	var pl Plugin
	if builtin {
		pl = builtinPlugin(f, &st)
	} else {
		pl = a.installedPlugin(ctx, *rec, &st)
	}
	return &pl, idx, nil
}

// DeletePlugin uninstalls a plugin (administrators only): its paths go
// on every node, and what its repositories hold stays (installing it
// again serves it again). A built-in format handler is disabled instead.
func (a *App) DeletePlugin(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	if _, ok := a.handlers()[id]; ok {
		return 0, apierr.New(apierr.Conflict, "%s is a built-in format handler: it cannot be uninstalled; disable it (POST /api/v1/plugins/%s/disable)", id, id)
	}
	idx, err := a.commit(ctx, &meta.PluginUninstall{ID: id})
	if errors.Is(err, meta.ErrNotFound) {
		return 0, apierr.New(apierr.NotFound, "no plugin %s is installed", id)
	}
	return idx, err
}

// InstallPlugin installs a format handler compiled to WebAssembly from
// body (administrators only): the module is loaded here first (it must
// speak the host interface and declare a well-formed manifest), its
// format and prefix must be nobody else's, then it is stored as a blob
// on a quorum of the origins and recorded; every node loads it from
// there. A module whose id is installed replaces it (an upgrade).
func (a *App) InstallPlugin(ctx context.Context, p *auth.Principal, body io.Reader) (*Plugin, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if a.PluginHost == nil {
		return nil, 0, apierr.New(apierr.Unavailable, "this origin runs no plugins")
	}
	limit := a.PluginHost.MaxModule()
	wasm, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	if err != nil {
		return nil, 0, err
	}
	if len(wasm) > limit {
		return nil, 0, apierr.New(apierr.PayloadTooLarge, "a plugin's module is at most %d bytes", limit)
	}
	man, err := a.PluginHost.Inspect(ctx, wasm)
	if err != nil {
		return nil, 0, apierr.Invalid("module", "the plugin cannot be installed: %s", err.Error())
	}
	if err := a.checkPluginClaims(man); err != nil {
		return nil, 0, err
	}
	info, err := a.Blobs.Put(ctx, bytes.NewReader(wasm), blob.PutOptions{})
	if err != nil {
		return nil, 0, err
	}
	rec := meta.InstalledPlugin{ID: man.ID, Name: man.Name, Version: man.Version, Format: man.Format, Prefix: man.Prefix,
		Roots: man.Roots, Digest: info.Digest, Size: info.Size, InstalledAt: a.now(), InstalledBy: p.Name()}
	cmd := &meta.PluginInstall{Plugin: rec}
	if err := a.view(func(tx *meta.Tx) error {
		old, err := tx.InstalledPlugin(man.ID)
		if err == nil {
			cmd.Replaces = old.Digest
		} else if !errors.Is(err, meta.ErrNotFound) {
			return err
		}
		return nil
	}); err != nil {
		return nil, 0, err
	}
	idx, err := a.commit(ctx, cmd)
	if err != nil {
		return nil, idx, err
	}
	pl := a.installedPlugin(ctx, rec, nil)
	return &pl, idx, nil
}

// checkPluginClaims refuses a manifest whose format, prefix or roots are
// a built-in handler's or the registry's own.
func (a *App) checkPluginClaims(man abi.Manifest) error {
	if _, ok := a.handlers()[man.ID]; ok {
		return apierr.New(apierr.Conflict, "%s is a built-in format handler's id", man.ID)
	}
	if all.Known(man.Format) {
		return apierr.New(apierr.Conflict, "format %s is a built-in format", man.Format)
	}
	for _, f := range a.Formats {
		if slices.Contains(format.Prefixes(f), man.Prefix) {
			return apierr.New(apierr.Conflict, "prefix %s is the %s format's", man.Prefix, f.Name())
		}
	}
	for _, r := range ReservedPrefixes {
		if man.Prefix == r || strings.HasPrefix(man.Prefix, r+"/") {
			return apierr.New(apierr.Conflict, "prefix %s is the registry's own", man.Prefix)
		}
	}
	return nil
}

func (a *App) installedPlugins() ([]meta.InstalledPlugin, error) {
	var out []meta.InstalledPlugin
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.InstalledPlugins(); return err })
	return out, err
}

func (a *App) installedPlugin(ctx context.Context, rec meta.InstalledPlugin, st *meta.PluginState) Plugin {
	at := rec.InstalledAt
	pl := Plugin{ID: rec.ID, Name: rec.Name, Version: rec.Version, Enabled: true, Capabilities: []string{CapFormatHandler},
		Formats: []string{rec.Format}, Prefixes: append([]string{rec.Prefix}, rec.Roots...),
		Module: &PluginModule{Digest: rec.Digest, Size: rec.Size, ABI: abi.Version}, InstalledAt: &at, InstalledBy: rec.InstalledBy}
	if st != nil {
		at := st.UpdatedAt
		pl.Enabled, pl.UpdatedAt, pl.UpdatedBy = st.Enabled, &at, st.UpdatedBy
	}
	if a.PluginHost != nil {
		if err := a.PluginHost.LoadError(ctx, rec.ID); err != nil {
			pl.LoadError = err.Error()
		}
	}
	return pl
}

// formatOf is the handler serving a repository format: a built-in one,
// or an installed plugin's loaded here (nil: none).
func (a *App) formatOf(ctx context.Context, name string) format.Format {
	if f, ok := a.Formats[name]; ok {
		return f
	}
	if a.PluginHost != nil {
		return a.PluginHost.FormatOf(ctx, name)
	}
	return nil
}

// PluginSetup is how a client is pointed at a repository of an installed
// plugin's format, as its manifest says (nil: it says nothing, or the
// format is no plugin's).
func (a *App) PluginSetup(ctx context.Context, repoFormat string) []abi.Snippet {
	if _, builtin := a.Formats[repoFormat]; builtin || a.PluginHost == nil {
		return nil
	}
	if f, ok := a.PluginHost.FormatOf(ctx, repoFormat).(interface{ Manifest() abi.Manifest }); ok {
		return f.Manifest().Setup
	}
	return nil
}

// knownFormat reports whether name is a format identifier: a built-in
// one, or that of an installed plugin.
func (a *App) knownFormat(name string) (ok bool) {
	_ = a.view(func(tx *meta.Tx) error { ok = knownFormatIn(tx, name); return nil })
	return ok
}

// knownFormatIn is knownFormat in tx.
func knownFormatIn(tx *meta.Tx, name string) bool {
	if all.Known(name) {
		return true
	}
	plugins, _ := tx.InstalledPlugins()
	return slices.ContainsFunc(plugins, func(p meta.InstalledPlugin) bool { return p.Format == name })
}

// knownFormats lists the format identifiers, built-in and installed.
func (a *App) knownFormats() []string {
	out := all.Names()
	plugins, _ := a.installedPlugins()
	for _, p := range plugins {
		out = append(out, p.Format)
	}
	return out
}
