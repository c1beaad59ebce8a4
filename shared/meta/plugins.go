package meta

import (
	"errors"
	"slices"
	"time"
)

// Plugins: the format handlers, each a plugin an administrator turns off
// and on. A record is kept only for a handler that was turned off (or on
// again), so a registry that never touched them holds none; the format
// servers of origins and edges read it on each request, from their own
// store, and answer a disabled handler's paths with a clear refusal.

//
// An installed plugin (a WebAssembly format handler) is a record of its
// own, fed to edges, keeping its module's blob: every node loads the
// module from its blob store (an edge from an origin) and serves the
// plugin's paths.

const (
	KindPlugin          Kind    = 35
	KindPluginModule    Kind    = 36
	CmdPluginSet        CmdType = 64
	CmdPluginInstall    CmdType = 65
	CmdPluginUninstall  CmdType = 66
	maxPluginRecordText         = 200
)

func init() {
	declareKind(KindPlugin, kindDecl{Name: "plugins", Bucket: "plugins"})
	declareKind(KindPluginModule, kindDecl{Name: "installed plugins", Bucket: "plugin_modules", Index: indexBlob(KindPluginModule, func(r *InstalledPlugin) string { return r.Digest })})
	declareCommand(CmdPluginSet, func() Command { return new(PluginSet) })
	declareCommand(CmdPluginInstall, func() Command { return new(PluginInstall) })
	declareCommand(CmdPluginUninstall, func() Command { return new(PluginUninstall) })
}

// InstalledPlugin is an installed plugin: what its module declared, and
// the module's blob.
type InstalledPlugin struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Format is the repository format it serves; Prefix its URL prefix;
	// Roots the paths it serves outside its prefix (service discovery
	// documents under /.well-known/).
	Format string   `json:"format"`
	Prefix string   `json:"prefix"`
	Roots  []string `json:"roots,omitempty"`
	// Digest and Size are the module's blob.
	Digest      string    `json:"digest"`
	Size        int64     `json:"size"`
	InstalledAt time.Time `json:"installed_at"`
	InstalledBy string    `json:"installed_by"`
}

// PluginInstall installs a plugin, or replaces one (an upgrade) when
// Replaces is the digest of the module installed under its id now
// (what the installer read: a conflict when it changed since). Ids,
// formats, prefixes and roots are each one plugin's.
type PluginInstall struct {
	Plugin   InstalledPlugin `json:"plugin"`
	Replaces string          `json:"replaces,omitempty"`
}

// PluginUninstall removes an installed plugin and its switch; what its
// repositories hold stays.
type PluginUninstall struct {
	ID string `json:"id"`
}

func (*PluginInstall) Type() CmdType   { return CmdPluginInstall }
func (*PluginUninstall) Type() CmdType { return CmdPluginUninstall }
func (*PluginInstall) Scope() string   { return "" }
func (*PluginUninstall) Scope() string { return "" }

func (c *PluginInstall) apply(tx *Tx) error {
	p := c.Plugin
	for _, f := range []string{p.ID, p.Name, p.Version, p.Format, p.Prefix, p.Digest} {
		if f == "" || len(f) > maxPluginRecordText {
			return Invalidf("an installed plugin has an id, a name, a version, a format, a prefix and a module digest, each of at most %d bytes", maxPluginRecordText)
		}
	}
	if len(p.Roots) > 8 || slices.ContainsFunc(p.Roots, func(r string) bool { return r == "" || len(r) > maxPluginRecordText }) {
		return Invalidf("a plugin serves at most 8 paths outside its prefix, each of at most %d bytes", maxPluginRecordText)
	}
	old, err := tx.InstalledPlugin(p.ID)
	switch {
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	case old == nil && c.Replaces != "":
		return NotFoundf("plugin %s is not installed", p.ID)
	case old != nil && c.Replaces == "":
		return Conflictf("plugin %s is installed", p.ID)
	case old != nil && old.Digest != c.Replaces:
		return Conflictf("plugin %s was replaced since it was read", p.ID)
	}
	others, err := tx.InstalledPlugins()
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID == p.ID {
			continue
		}
		if o.Format == p.Format || o.Prefix == p.Prefix {
			return Conflictf("plugin %s serves format %s under %s already", o.ID, o.Format, o.Prefix)
		}
		for _, r := range p.Roots {
			if slices.Contains(o.Roots, r) {
				return Conflictf("plugin %s serves %s already", o.ID, r)
			}
		}
	}
	return tx.putRec(KindPluginModule, p.ID, p)
}

func (c *PluginUninstall) apply(tx *Tx) error {
	if !tx.exists(KindPluginModule, c.ID) {
		return NotFoundf("plugin %s is not installed", c.ID)
	}
	if err := tx.delRec(KindPlugin, c.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return tx.delRec(KindPluginModule, c.ID)
}

// InstalledPlugin reads an installed plugin.
func (tx *Tx) InstalledPlugin(id string) (*InstalledPlugin, error) {
	return getRec[InstalledPlugin](tx, KindPluginModule, id, "plugin")
}

// InstalledPlugins lists the installed plugins, by id.
func (tx *Tx) InstalledPlugins() ([]InstalledPlugin, error) {
	return listRecs[InstalledPlugin](tx, KindPluginModule, "")
}

// PluginState is a plugin's switch.
type PluginState struct {
	ID        string    `json:"id"`
	Enabled   bool      `json:"enabled"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// PluginSet turns a plugin on or off.
type PluginSet struct {
	State PluginState `json:"state"`
}

func (*PluginSet) Type() CmdType { return CmdPluginSet }
func (*PluginSet) Scope() string { return "" }

func (c *PluginSet) apply(tx *Tx) error {
	if c.State.ID == "" || len(c.State.ID) > 100 {
		return Invalidf("a plugin is named by an id of 1 to 100 bytes")
	}
	return tx.putRec(KindPlugin, c.State.ID, c.State)
}

// PluginStates lists the switches set, by id (a plugin never switched
// is on).
func (tx *Tx) PluginStates() (map[string]PluginState, error) {
	list, err := listRecs[PluginState](tx, KindPlugin, "")
	out := map[string]PluginState{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out, err
}
