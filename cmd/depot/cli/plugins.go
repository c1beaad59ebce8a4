package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/depot-registry/depot/shared/config"
)

var pluginView = view[Plugin]{
	columns: []string{"ID", "NAME", "VERSION", "FORMATS", "PATHS", "ENABLED", "KIND"},
	row: func(p Plugin) []string {
		return []string{p.ID, p.Name, p.Version, strings.Join(p.Formats, ","), strings.Join(p.Prefixes, ","), yesNo(p.Enabled), pluginKind(p)}
	},
	detail: func(p Plugin) [][2]string {
		out := [][2]string{{"ID", p.ID}, {"Name", p.Name}, {"Version", p.Version}, {"Formats", strings.Join(p.Formats, ", ")},
			{"Paths", strings.Join(p.Prefixes, ", ")}, {"Enabled", yesNo(p.Enabled)}, {"Kind", pluginKind(p)}}
		if p.Module != nil {
			out = append(out, [2]string{"Module", fmt.Sprintf("%s (%s)", p.Module.Digest, config.FormatBytes(p.Module.Size))})
		}
		if p.LoadError != "" {
			out = append(out, [2]string{"Not loaded", p.LoadError})
		}
		return out
	},
}

func pluginKind(p Plugin) string {
	switch {
	case p.Builtin:
		return "built in"
	case p.LoadError != "":
		return "installed, not loaded"
	}
	return "installed"
}

var pluginGroup = &group{name: "plugin", summary: "list, install, enable, disable and uninstall plugins (administrators)",
	about: "Manages the plugins (/api/v1/plugins; administrators only): every built-in format handler,\n" +
		"and format handlers compiled to WebAssembly, installed from their module (docs/plugins.md).",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "every plugin",
			about: "Lists every plugin: the built-in format handlers and the installed ones.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, _ []string) error {
					ps, err := s.client.Plugins(s.ctx)
					if err != nil {
						return err
					}
					return printList(s.io.Out, s.output, pluginView, ps)
				}
			}},
		{name: "install", args: "MODULE.wasm", minArgs: 1, maxArgs: 1, summary: "install or upgrade a plugin",
			about: "Installs the format handler compiled to the WebAssembly module MODULE.wasm (POST\n" +
				"/api/v1/plugins): every origin and edge serves it. A module of an installed plugin's id\n" +
				"upgrades it.\n\n  depot plugin install terraform.wasm",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					f, err := os.Open(args[0])
					if err != nil {
						return err
					}
					defer f.Close()
					p, err := s.client.InstallPlugin(s.ctx, f)
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, pluginView, p)
				}
			}},
		pluginSwitch(true), pluginSwitch(false),
		{name: "uninstall", args: "PLUGIN...", minArgs: 1, maxArgs: -1, summary: "uninstall installed plugins",
			about: "Uninstalls installed plugins, each named by its id: their paths go at every node; what their\n" +
				"repositories hold stays, and is served again when the plugin is installed again.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					for _, id := range args {
						if err := s.client.UninstallPlugin(s.ctx, id); err != nil {
							return fmt.Errorf("plugin %s: %w", id, err)
						}
						s.done("uninstalled plugin %s", id)
					}
					return nil
				}
			}},
	},
}

func pluginSwitch(enable bool) *command {
	name, about := "disable", "Disables plugins, each named by its id: their client paths answer 404 saying so, at every\nnode; nothing they store is touched."
	if enable {
		name, about = "enable", "Enables plugins, each named by its id: their client paths answer again."
	}
	return &command{name: name, args: "PLUGIN...", minArgs: 1, maxArgs: -1, summary: name + " plugins", about: about,
		setup: func(*config.Set) func(*session, []string) error {
			return func(s *session, args []string) error {
				for _, id := range args {
					p, err := s.client.SetPlugin(s.ctx, id, enable)
					if err != nil {
						return fmt.Errorf("plugin %s: %w", id, err)
					}
					if s.output == "json" {
						if err := printItem(s.io.Out, s.output, pluginView, p); err != nil {
							return err
						}
						continue
					}
					s.done("%sd plugin %s", name, id)
				}
				return nil
			}
		}}
}
