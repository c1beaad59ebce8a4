package auth

import (
	"slices"
	"strings"
)

// Access is one grant of a registry token, as the docker token spec's
// "access" claim has it: a resource (type and name) and the actions
// granted on it (pull, push, delete, or "*").
type Access struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// ParseAccessScope parses one requested scope, "type:name:action,action".
// The name may hold colons (a registry host with a port), so the type is
// before the first colon and the actions after the last.
func ParseAccessScope(s string) (Access, bool) {
	typ, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Access{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || typ == "" || len(s) > 512 {
		return Access{}, false
	}
	a := Access{Type: typ, Name: rest[:i]}
	for _, act := range strings.Split(rest[i+1:], ",") {
		if act != "" && !slices.Contains(a.Actions, act) {
			a.Actions = append(a.Actions, act)
		}
	}
	return a, len(a.Actions) > 0
}

// Granted reports whether a registry principal may do action on the
// resource typ/name. Principals from other credentials are not limited by
// access claims (their scopes and grants decide).
func (p *Principal) Granted(typ, name, action string) bool {
	if p == nil || p.Via != CredRegistry {
		return true
	}
	for _, a := range p.Access {
		if a.Type == typ && a.Name == name && (slices.Contains(a.Actions, action) || slices.Contains(a.Actions, "*")) {
			return true
		}
	}
	return false
}

// ReadOnly reports whether g grants nothing but reads: pulls, and the
// catalog (which lists only what the caller may read).
func (g RegistryGrant) ReadOnly() bool {
	for _, a := range g.Access {
		if a.Type == "registry" && a.Name == "catalog" {
			continue
		}
		for _, act := range a.Actions {
			if act != "pull" {
				return false
			}
		}
	}
	return true
}
