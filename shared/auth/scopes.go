package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Scope is one permission granted to an API token.
//
// Textual forms: "admin" (Global), "repository:<action>" (all repositories)
// and "repository:<action>:<repo>" (one repository), where action is one of
// read, write, delete, admin.
type Scope struct {
	Action string // read|write|delete|admin
	Repo   string // "" = all repositories
	Global bool   // the "admin" scope; overrides Action and Repo
}

const (
	scopeRead   = "read"
	scopeWrite  = "write"
	scopeDelete = "delete"
	scopeAdmin  = "admin"

	scopeGlobalAdmin = "admin"
	scopeRepoPrefix  = "repository"
	maxScopeRepoLen  = 100
)

// ParseScope parses one scope. It is strict (no trimming, case-sensitive) so
// every accepted scope has exactly one spelling: ParseScope(s).String() == s.
func ParseScope(s string) (Scope, error) {
	if s == scopeGlobalAdmin {
		return Scope{Action: scopeAdmin, Global: true}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != scopeRepoPrefix {
		return Scope{}, errors.New(`scope must be "admin" or "repository:<action>[:<repository>]"`)
	}
	if !isScopeAction(parts[1]) {
		return Scope{}, fmt.Errorf("unknown action %q (want read, write, delete or admin)", parts[1])
	}
	sc := Scope{Action: parts[1]}
	if len(parts) == 3 {
		if !isScopeRepoName(parts[2]) {
			return Scope{}, fmt.Errorf("invalid repository name %q", parts[2])
		}
		sc.Repo = parts[2]
	}
	return sc, nil
}

// ParseScopes parses a token's scope list. A token without scopes would be
// useless, so an empty list is an error; errors name the offending scope.
func ParseScopes(ss []string) ([]Scope, error) {
	if len(ss) == 0 {
		return nil, errors.New("at least one scope is required")
	}
	out := make([]Scope, 0, len(ss))
	for _, s := range ss {
		sc, err := ParseScope(s)
		if err != nil {
			return nil, fmt.Errorf("invalid scope %q: %w", s, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// String returns the canonical textual form accepted by ParseScope.
func (s Scope) String() string {
	if s.Global {
		return scopeGlobalAdmin
	}
	if s.Repo == "" {
		return scopeRepoPrefix + ":" + s.Action
	}
	return scopeRepoPrefix + ":" + s.Action + ":" + s.Repo
}

// Allows reports whether scopes permit action on the repository repoName.
// "admin" allows everything; repository:admin allows every action on its
// repositories; write and delete also imply read; read allows read only.
// Unknown actions are always denied.
func Allows(scopes []Scope, action, repoName string) bool {
	if !isScopeAction(action) {
		return false
	}
	for _, s := range scopes {
		if s.Global {
			return true
		}
		// Repository names are unique case-insensitively, so a narrowed
		// scope matches the same way.
		if s.Repo != "" && !strings.EqualFold(s.Repo, repoName) {
			continue
		}
		if s.grants(action) {
			return true
		}
	}
	return false
}

// AllowsGlobalAdmin reports whether scopes include the global "admin" scope;
// repository:admin is deliberately not enough.
func AllowsGlobalAdmin(scopes []Scope) bool {
	for _, s := range scopes {
		if s.Global {
			return true
		}
	}
	return false
}

func (s Scope) grants(action string) bool {
	switch s.Action {
	case scopeAdmin:
		return true
	case scopeWrite, scopeDelete:
		return action == s.Action || action == scopeRead
	case scopeRead:
		return action == scopeRead
	}
	return false
}

func isScopeAction(a string) bool {
	switch a {
	case scopeRead, scopeWrite, scopeDelete, scopeAdmin:
		return true
	}
	return false
}

// isScopeRepoName implements ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$ by hand, which
// keeps path-like names ("../x", "a/b") out without a package-level regexp.
func isScopeRepoName(s string) bool {
	if len(s) == 0 || len(s) > maxScopeRepoLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
