package meta

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Settings an administrator changes at run time: one record per setting
// set (its key, as shared/settings lists them), global and fed to edges,
// so every node applies a change without a restart. The store keeps what
// was set, bounded; what a key means and which values it takes is the
// settings registry's, checked before the command is made.

const (
	KindSetting    Kind    = 15
	CmdSettingsSet CmdType = 43
)

// EventSettingsUpdated is recorded by every change of settings: its data
// names the keys changed and who changed them.
const EventSettingsUpdated = "settings.updated"

func init() {
	declareKind(KindSetting, kindDecl{Name: "settings", Bucket: "settings"})
	declareCommand(CmdSettingsSet, func() Command { return new(SettingsSet) })
}

// Bounds of a settings change.
const (
	MaxSettingKey   = 128
	MaxSettingValue = 4 << 10
	MaxSettings     = 256
)

// Setting is a value set through the API.
type Setting struct {
	Value     json.RawMessage `json:"value"`
	UpdatedBy string          `json:"updated_by,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// SettingsSet sets the values of Set and forgets those of Reset (their
// defaults apply again), at once.
type SettingsSet struct {
	Set   map[string]json.RawMessage `json:"set,omitempty"`
	Reset []string                   `json:"reset,omitempty"`
	Actor *Actor                     `json:"actor,omitempty"`
	At    time.Time                  `json:"at"`
}

func (*SettingsSet) Type() CmdType { return CmdSettingsSet }
func (*SettingsSet) Scope() string { return "" }

func (c *SettingsSet) apply(tx *Tx) error {
	if len(c.Set)+len(c.Reset) > MaxSettings {
		return Invalidf("at most %d settings at once", MaxSettings)
	}
	var by string
	if c.Actor != nil {
		by = c.Actor.Username
	}
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(c.Set)) {
		v := c.Set[k]
		if k == "" || len(k) > MaxSettingKey || len(v) > MaxSettingValue || !json.Valid(v) {
			return Invalidf("setting %.64q: a key of at most %d bytes and a JSON value of at most %d", k, MaxSettingKey, MaxSettingValue)
		}
		if err := tx.putRec(KindSetting, k, Setting{Value: v, UpdatedBy: by, UpdatedAt: c.At}); err != nil {
			return err
		}
		changed = append(changed, k)
	}
	for _, k := range c.Reset {
		if tx.exists(KindSetting, k) {
			if err := tx.delRec(KindSetting, k); err != nil {
				return err
			}
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	slices.Sort(changed)
	data, _ := json.Marshal(map[string]any{"keys": changed, "updated_by": c.Actor})
	e := Event{Name: EventSettingsUpdated, Timestamp: c.At, Data: data}
	if c.Actor != nil {
		e.UserID = c.Actor.UserID
	}
	return tx.emit(e)
}

// Settings reads every value set, by key.
func (tx *Tx) Settings() (map[string]Setting, error) {
	out := map[string]Setting{}
	err := tx.scan(Space(KindSetting), "", func(k string, v []byte) error {
		var s Setting
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		out[k] = s
		return nil
	})
	return out, err
}
