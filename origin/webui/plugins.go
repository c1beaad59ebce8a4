package webui

import (
	"net/http"

	"github.com/depot-registry/depot/shared/apierr"
)

// The plugins page (administrators): every format handler, with its
// switch; installing one compiled to WebAssembly, and uninstalling it.

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

// installPlugin installs the module an administrator uploaded, streamed
// to the application, which bounds it.
func (u *UI) installPlugin(w http.ResponseWriter, c *call) error {
	part, err := c.parts.NextPart()
	if err != nil || part.FormName() != "module" || part.FileName() == "" {
		return u.after(w, c, apierr.Invalid("module", "choose a plugin's WebAssembly module (.wasm)"), "", pluginsPath)
	}
	pl, _, err := u.d.App.InstallPlugin(c.r.Context(), c.p, part)
	done := ""
	if err == nil {
		done = "Installed " + pl.Name + " " + pl.Version + ": repositories of format " + pl.Formats[0] + " are served under " + pl.Prefixes[0] + "."
	}
	return u.after(w, c, err, done, pluginsPath)
}

func (u *UI) uninstallPlugin(w http.ResponseWriter, c *call) error {
	id := c.r.PathValue("id")
	_, err := u.d.App.DeletePlugin(c.r.Context(), c.p, id)
	return u.after(w, c, err, "Plugin "+id+" is uninstalled: its paths are gone; what its repositories hold stays.", pluginsPath)
}
