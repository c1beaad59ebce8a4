package meta

import (
	"encoding/json"
	"time"
)

// Plugins: the format handlers, each a plugin an administrator turns off
// and on. A record is kept only for a handler that was turned off (or on
// again), so a registry that never touched them holds none; the format
// servers of origins and edges read it on each request, from their own
// store, and answer a disabled handler's paths with a clear refusal.

const (
	KindPlugin   Kind    = 35
	CmdPluginSet CmdType = 64
)

func init() {
	declareKind(KindPlugin, kindDecl{Name: "plugins", Bucket: "plugins"})
	declareCommand(CmdPluginSet, func() Command { return new(PluginSet) })
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
	out := map[string]PluginState{}
	err := tx.scan(Space(KindPlugin), "", func(_ string, v []byte) error {
		var s PluginState
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		out[s.ID] = s
		return nil
	})
	return out, err
}
