package auth

import (
	"slices"

	"github.com/depot-registry/depot/shared/meta"
)

// Principal is who a request acts as. A nil Principal is anonymous.
type Principal struct {
	UserID             string
	Username           string
	Role               meta.Role
	MustChangePassword bool
	// Token is set when the request authenticated with an API token; its
	// scopes narrow what the user may do.
	TokenID string
	Scopes  []Scope
	// SessionID is set for JWT sessions (logout revokes it).
	SessionID string
	// Via is the kind of credential the request presented.
	Via Credential
	// Audience and Access are set for registry tokens: the format they
	// were issued for and what they grant there (docker's access claim).
	Audience string
	Access   []Access
	// EdgeID is set for an edge node's credential (Via CredEdge): the
	// principal is a node, not a user, and is anonymous to user routes.
	EdgeID string
	// pwVersion fingerprints the password hash a password credential
	// matched, so a registry token derived from it dies with the password.
	pwVersion string
	// vouched: an origin vouched for the login session (an edge cannot
	// look sessions up), so registry tokens this edge issues from it say so.
	vouched bool
}

// Credential is the kind of credential a principal presented.
type Credential uint8

// Credential kinds.
const (
	CredNone     Credential = iota
	CredPassword            // username and password (Basic or login)
	CredSession             // access JWT of a login session
	CredAPIToken            // API token
	CredRegistry            // registry token from a format's token endpoint
	CredEdge                // an edge node's credential
	CredJob                 // none: a job of the registry's own (Job)
)

// Job is the principal of a job the registry runs on its own (the
// retention rules): no user, named in what it writes.
func Job(name string) *Principal { return &Principal{Username: name, Via: CredJob} }

// JobFor is a job of the registry's own acting as user u, with u's role
// and grants as they are now (a migration writes as the administrator who
// made it); it presents no credential.
func JobFor(u *meta.User) *Principal {
	p := principalOf(u)
	p.Via, p.MustChangePassword = CredJob, false
	return p
}

// Edge is the id of the edge node p authenticated as, or "".
func (p *Principal) Edge() string {
	if p == nil || p.Via != CredEdge {
		return ""
	}
	return p.EdgeID
}

// ManagesAccount reports whether p may manage its own account (profile,
// API tokens): a login session or password, or a token with the global
// admin scope. A token narrowed to repositories acts on repositories only.
func (p *Principal) ManagesAccount() bool {
	if p.Anonymous() {
		return false
	}
	switch p.Via {
	case CredSession, CredPassword:
		return true
	case CredAPIToken:
		return AllowsGlobalAdmin(p.Scopes)
	}
	return false
}

// AcceptedOn reports whether p's credential may be used in area (a format
// name, or "api"): a registry token only where it was issued.
func (p *Principal) AcceptedOn(area string) bool {
	return p == nil || p.Via != CredRegistry || p.Audience == area
}

// Anonymous reports whether p is nobody.
func (p *Principal) Anonymous() bool { return p == nil || p.UserID == "" }

// Name is the username, "edge:<id>" for an edge node, or "anonymous".
func (p *Principal) Name() string {
	if id := p.Edge(); id != "" {
		return "edge:" + id
	}
	if p != nil && p.Via == CredJob {
		return p.Username
	}
	if p.Anonymous() {
		return "anonymous"
	}
	return p.Username
}

// Actor is p as events name who acted: its user id (none when
// anonymous) and its name.
func (p *Principal) Actor() meta.Actor {
	a := meta.Actor{Username: p.Name()}
	if !p.Anonymous() {
		a.UserID = p.UserID
	}
	return a
}

// IsAdmin reports whether p may do everything: an admin user whose
// credential (if a token) carries the global admin scope.
func (p *Principal) IsAdmin() bool {
	if p.Anonymous() || p.Role != meta.RoleAdmin {
		return false
	}
	return p.TokenID == "" || AllowsGlobalAdmin(p.Scopes)
}

// scopeAllows applies token scopes: a token never grants more than its
// scopes, whatever its user may do.
func (p *Principal) scopeAllows(action, repoName string) bool {
	return p.TokenID == "" || Allows(p.Scopes, action, repoName)
}

// Can reports whether p may perform action (read, write, delete, admin) on
// repo. Rules, in order: public repositories are readable by all (a
// credential never reads less than no credential); token scopes bound
// everything else; admins may do everything; viewers never write;
// otherwise the user's own grants and their groups' grants decide. A
// failure to read the grants is an error, never a "no".
func Can(tx *meta.Tx, p *Principal, repo *meta.Repository, action string) (bool, error) {
	if action == meta.ActionRead && repo.Public {
		return true, nil
	}
	if p.Anonymous() || p.MustChangePassword || !p.scopeAllows(action, repo.Name) {
		return false, nil
	}
	switch p.Role {
	case meta.RoleAdmin:
		return true, nil
	case meta.RoleViewer:
		if action != meta.ActionRead {
			return false, nil
		}
	case meta.RoleUser:
	default:
		return false, nil
	}
	grants, err := tx.Grants(p.UserID, repo.ID)
	if err != nil {
		return false, err
	}
	for _, g := range grants {
		for _, have := range g.Permissions {
			if meta.Implies(have, action) {
				return true, nil
			}
		}
	}
	return false, nil
}

// Readable lists, sorted, the ids of the repositories p may read: for
// every repository the answer of Can(tx, p, repo, read), found from the
// indexes (the public repositories, p's grants) instead of by checking
// each repository, so that listings cost what the caller may see.
func Readable(tx *meta.Tx, p *Principal) ([]string, error) {
	ids := tx.PublicRepoIDs()
	if p.Anonymous() || p.MustChangePassword {
		return ids, nil
	}
	var more []string
	switch p.Role {
	case meta.RoleAdmin:
		more = tx.RepoIDs()
	case meta.RoleUser, meta.RoleViewer:
		var err error
		if more, err = tx.GrantedRepoIDs(p.UserID, meta.ActionRead); err != nil {
			return nil, err
		}
	}
	everywhere := p.scopeEverywhere(meta.ActionRead)
	for _, id := range more {
		if !everywhere {
			repo, err := tx.Repo(id)
			if err != nil {
				return nil, err
			}
			if !p.scopeAllows(meta.ActionRead, repo.Name) {
				continue
			}
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// scopeEverywhere reports whether p's token scopes, if it came with a
// token, allow action on every repository.
func (p *Principal) scopeEverywhere(action string) bool {
	if p.TokenID == "" {
		return true
	}
	for _, s := range p.Scopes {
		if s.Global || s.Repo == "" && s.grants(action) {
			return true
		}
	}
	return false
}
