package webui

import (
	"net/http"
)

// The plugins page (administrators): every format handler, with its
// switch.

const pluginsPath = Prefix + "/plugins"

func (u *UI) plugins(w http.ResponseWriter, c *call) error {
	ps, err := u.d.App.Plugins(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "plugins", "Plugins", ps)
}

func (u *UI) setPlugin(enabled bool) func(http.ResponseWriter, *call) error {
	return func(w http.ResponseWriter, c *call) error {
		id := c.r.PathValue("id")
		_, _, err := u.d.App.SetPlugin(c.r.Context(), c.p, id, enabled)
		done := "The " + id + " format handler is disabled: its client paths answer 404 saying so; nothing it stores is touched."
		if enabled {
			done = "The " + id + " format handler is enabled."
		}
		return u.after(w, c, err, done, pluginsPath)
	}
}
