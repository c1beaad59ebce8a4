package webui

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/settings"
)

// The settings page (administrators): every run-time setting with its
// value, default and source; one form changes those edited, a button per
// setting brings its default back; a setting this origin's flag fixes is
// shown read-only with the flag.

type settingsPage struct {
	Settings   []settings.Row
	Err, Field string
}

func (p settingsPage) formError() string { return p.Err }

func (u *UI) settingsPage(w http.ResponseWriter, c *call) error {
	v, err := u.d.App.GetSettings(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "settings", "Settings", settingsPage{Settings: v.Settings})
}

// changeSettings sends the settings whose value the form changed (a
// checkbox absent is false), or, with reset=<key>, that key's default.
func (u *UI) changeSettings(w http.ResponseWriter, c *call) error {
	cur, err := u.d.App.GetSettings(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	f := c.r.PostForm
	change := map[string]json.RawMessage{}
	if key := f.Get("reset"); key != "" {
		change[key] = json.RawMessage("null")
	} else {
		for _, r := range cur.Settings {
			if r.FixedBy != "" {
				continue
			}
			var raw json.RawMessage
			switch r.Type {
			case "boolean":
				raw = json.RawMessage(map[bool]string{true: "true", false: "false"}[f.Get(r.Key) == "on"])
			case "integer":
				raw = json.RawMessage(strings.TrimSpace(f.Get(r.Key)))
			default:
				raw, _ = json.Marshal(f.Get(r.Key))
			}
			if was, _ := json.Marshal(r.Value); string(was) != string(raw) {
				change[r.Key] = raw
			}
		}
	}
	if len(change) == 0 {
		u.flash(w, c.r, "Nothing changed.")
		http.Redirect(w, c.r, Prefix+"/settings", http.StatusSeeOther)
		return nil
	}
	_, _, err = u.d.App.UpdateSettings(c.r.Context(), c.p, change)
	p := settingsPage{}
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		p.Settings = cur.Settings
		return u.render(w, c, e.Status(), "settings", "Settings", p)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Saved: "+strings.Join(slices.Sorted(maps.Keys(change)), ", ")+". Every origin applies it at its next request.")
	http.Redirect(w, c.r, Prefix+"/settings", http.StatusSeeOther)
	return nil
}
