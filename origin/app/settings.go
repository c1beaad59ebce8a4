package app

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/settings"
)

// liveSettings remembers the effective settings until a write touches
// the settings records, so that every request may read them.
type liveSettings struct {
	once sync.Once
	memo *meta.Memo[struct{}, settings.Values]
}

// Settings are the settings in effect on this origin now: its fixed
// ones, else those set through the API, else the defaults.
func (a *App) Settings() settings.Values {
	a.live.once.Do(func() {
		a.live.memo = meta.NewMemo[struct{}, settings.Values](a.Store, 1, []meta.Kind{meta.KindSetting}, nil)
	})
	v, err := a.live.memo.Get(struct{}{}, "", func(tx *meta.Tx) (settings.Values, bool, error) {
		stored, err := tx.Settings()
		return a.SettingsSource.Effective(stored), err == nil, err
	})
	if err != nil {
		return a.SettingsSource.Effective(nil)
	}
	return v
}

// SettingsView is GET /admin/settings: every setting with its value and
// where it comes from, and the values alone by key.
type SettingsView struct {
	Settings []settings.Row `json:"settings"`
	Values   map[string]any `json:"values"`
}

// GetSettings lists the settings (admin only).
func (a *App) GetSettings(_ context.Context, p *auth.Principal) (SettingsView, error) {
	if err := requireAdmin(p); err != nil {
		return SettingsView{}, err
	}
	var out SettingsView
	err := a.view(func(tx *meta.Tx) error {
		stored, err := tx.Settings()
		out = viewOf(a.SettingsSource.Rows(stored))
		return err
	})
	return out, err
}

func viewOf(rows []settings.Row) SettingsView {
	v := SettingsView{Settings: rows, Values: map[string]any{}}
	for _, r := range rows {
		v.Values[r.Key] = r.Value
	}
	return v
}

// UpdateSettings changes the settings given, by key, at once: a value
// sets one, null brings its default back (admin only). A key no setting
// has, a value it does not take, or a setting fixed by this origin's flag
// or environment refuses the whole change, naming the key. The change
// applies on every node, is recorded as the settings.updated event, and
// audited as any write.
func (a *App) UpdateSettings(ctx context.Context, p *auth.Principal, in map[string]json.RawMessage) (SettingsView, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return SettingsView{}, 0, err
	}
	if len(in) == 0 {
		return SettingsView{}, 0, apierr.New(apierr.BadRequest, "no settings given: send {\"<key>\": <value>, ...}; GET /api/v1/admin/settings lists them")
	}
	who := p.Actor()
	cmd := &meta.SettingsSet{Set: map[string]json.RawMessage{}, Actor: &who, At: a.now()}
	for key, raw := range in {
		d, ok := settings.Lookup(key)
		if !ok {
			return SettingsView{}, 0, apierr.Invalid(key, "no setting %q; GET /api/v1/admin/settings lists them", key)
		}
		if by, fixed := a.SettingsSource.Fixed[key]; fixed {
			return SettingsView{}, 0, apierr.New(apierr.Conflict,
				"%s is fixed on this origin by %s, which it was started with; change it there (or start it without) to set it here", key, by).With("field", key)
		}
		if string(raw) == "null" {
			cmd.Reset = append(cmd.Reset, key)
			continue
		}
		x, err := d.Check(raw)
		if err != nil {
			return SettingsView{}, 0, apierr.Invalid(key, "%s", err.Error())
		}
		cmd.Set[key], _ = json.Marshal(x) // as the registry reads it
	}
	idx, err := a.commit(ctx, cmd)
	if err != nil {
		return SettingsView{}, idx, err
	}
	a.wakeBackups() // a schedule may have changed
	out, err := a.GetSettings(ctx, p)
	return out, idx, err
}
