package format

import (
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// The read path's memos (meta.Memo): whether a caller may do an action on
// a repository named in a path, and which artifact a path names, kept
// while nothing they were decided from changes, so that a download
// decodes no records while its repository, its artifact and the caller's
// grants stay the same. Both are keyed on what decided them: the access
// on the principal's identity (the one its grants and scopes follow
// from), the artifact on its repository and path.

// Bounds on what the memos keep.
const (
	MaxRememberedAccess    = 100_000
	MaxRememberedArtifacts = 200_000
)

type envMemos struct {
	access *meta.Memo[accessKey, *meta.Repository]
	paths  *meta.Memo[pathKey, *meta.Artifact]
}

func (d *Env) memos() *envMemos {
	d.memoOnce.Do(func() {
		d.memo = &envMemos{
			access: meta.NewMemo[accessKey, *meta.Repository](d.Meta, MaxRememberedAccess,
				[]meta.Kind{meta.KindRepo, meta.KindPermission, meta.KindGroup, meta.KindUser}, nil),
			paths: meta.NewMemo[pathKey, *meta.Artifact](d.Meta, MaxRememberedArtifacts, nil, []meta.Kind{meta.KindArtifact}),
		}
	})
	return d.memo
}

// accessKey is an access decision's question: who (as far as grants and
// scopes go), on which repository name of which formats, for what.
type accessKey struct {
	via        auth.Credential
	user       string
	token      string // an API token's scopes are its own, and never change
	role       meta.Role
	mustChange bool
	name       string
	action     string
	formats    string
}

// accessKeyOf is p's question, when p's identity decides it alone (not
// for a registry token, whose claims grant what they say, nor an edge
// node).
func accessKeyOf(p *auth.Principal, name, action string, formats []string) (accessKey, bool) {
	k := accessKey{name: name, action: action, formats: strings.Join(formats, ",")}
	if p == nil {
		return k, true
	}
	if len(p.Access) > 0 || p.Audience != "" || p.EdgeID != "" {
		return k, false
	}
	k.via, k.user, k.token, k.role, k.mustChange = p.Via, p.UserID, p.TokenID, p.Role, p.MustChangePassword
	return k, true
}

type pathKey struct{ repo, path string }
