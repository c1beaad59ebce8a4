package webui

import (
	"strings"

	"github.com/depot-registry/depot/shared/auth"
)

// navEntry is a page in the navigation. Each feature still to come adds
// its page here, marked Admin when only
// administrators may open it.
type navEntry struct {
	Label, Path string
	Admin       bool
}

var navEntries = []navEntry{
	{Label: "Repositories", Path: "/repositories"},
	{Label: "Search", Path: "/search"},
	{Label: "API tokens", Path: "/tokens"},
	{Label: "Events", Path: "/events"},
	{Label: "Security", Path: "/security"},
	{Label: "Signing", Path: "/signing"},
	{Label: "Users", Path: "/users", Admin: true},
	{Label: "Groups", Path: "/groups", Admin: true},
	{Label: "Permissions", Path: "/permissions", Admin: true},
	{Label: "Settings", Path: "/settings", Admin: true},
	{Label: "Backups", Path: "/backups", Admin: true},
	{Label: "Migrations", Path: "/migrations", Admin: true},
	{Label: "Cleanup", Path: "/cleanup", Admin: true},
	{Label: "Plugins", Path: "/plugins", Admin: true},
	{Label: "Webhooks", Path: "/settings/webhooks", Admin: true},
	{Label: "Edge nodes", Path: "/edges", Admin: true},
	{Label: "Cluster", Path: "/cluster", Admin: true},
	{Label: "Statistics", Path: "/stats", Admin: true},
	{Label: "API", Path: "/api"},
}

type navItem struct {
	Label, Href string
	Current     bool
}

// nav is the navigation p sees, the entry of path (the longest that
// leads to it: Webhooks under Settings) marked current.
func nav(p *auth.Principal, path string) []navItem {
	var out []navItem
	best := -1
	for _, e := range navEntries {
		if e.Admin && !p.IsAdmin() {
			continue
		}
		href := Prefix + e.Path
		if (path == href || strings.HasPrefix(path, href+"/")) && (best < 0 || len(href) > len(out[best].Href)) {
			best = len(out)
		}
		out = append(out, navItem{Label: e.Label, Href: href})
	}
	if best >= 0 {
		out[best].Current = true
	}
	return out
}
