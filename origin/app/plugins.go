package app

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/version"
)

// Plugins: every format handler is a plugin an administrator turns off
// (its client paths answer a refusal, at origins and at edges, with
// nothing it stores touched) and on again.

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
func (a *App) Plugins(_ context.Context, p *auth.Principal) ([]Plugin, error) {
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
	slices.SortFunc(out, func(x, y Plugin) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// SetPlugin turns a plugin on or off (administrators only).
func (a *App) SetPlugin(ctx context.Context, p *auth.Principal, id string, enabled bool) (*Plugin, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	f, ok := a.handlers()[id]
	if !ok {
		return nil, 0, apierr.New(apierr.NotFound, "no plugin %s (GET /api/v1/plugins lists them)", id)
	}
	st := meta.PluginState{ID: id, Enabled: enabled, UpdatedAt: a.now(), UpdatedBy: p.Name()}
	idx, err := a.commit(ctx, &meta.PluginSet{State: st})
	if err != nil {
		return nil, idx, err
	}
	pl := builtinPlugin(f, &st)
	return &pl, idx, nil
}

// DeletePlugin uninstalls a plugin (administrators only); a built-in
// format handler is disabled instead.
func (a *App) DeletePlugin(_ context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	if _, ok := a.handlers()[id]; ok {
		return 0, apierr.New(apierr.Conflict, "%s is a built-in format handler: it cannot be uninstalled; disable it (POST /api/v1/plugins/%s/disable)", id, id)
	}
	return 0, apierr.New(apierr.NotFound, "no plugin %s", id)
}
