package meta

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// apply dispatches one command. Each case validates everything before its
// first write, so a command that returns an error has changed nothing.
func (tx *Tx) apply(c Command) error {
	switch c := c.(type) {
	case *UserCreate:
		return tx.userCreate(c)
	case *UserUpdate:
		return tx.userUpdate(c)
	case *UserDelete:
		return tx.userDelete(c)
	case *TokenCreate:
		return tx.tokenCreate(c)
	case *TokenRevoke:
		return tx.tokenRevoke(c)
	case *SessionCreate:
		return tx.sessionCreate(c)
	case *SessionRevoke:
		return tx.sessionRevoke(c)
	case *SessionPurge:
		return tx.sessionPurge(c)
	case *GroupCreate:
		return tx.groupCreate(c)
	case *GroupAddMembers:
		return tx.groupAddMembers(c)
	case *PermissionCreate:
		return tx.permissionCreate(c)
	case *PermissionDelete:
		return tx.permissionDelete(c)
	case *RepoCreate:
		return tx.repoCreate(c)
	case *RepoUpdate:
		return tx.repoUpdate(c)
	case *RepoDelete:
		return tx.repoDelete(c)
	case *ArtifactPut:
		return tx.artifactPut(c)
	case *ArtifactDelete:
		return tx.artifactDelete(c)
	case *ArtifactsApply:
		return tx.artifactsApply(c)
	case *KVApply:
		if _, err := tx.Repo(c.RepoID); err != nil {
			return err
		}
		return tx.kvApply(c.RepoID, c.Ops)
	}
	panic(fmt.Sprintf("meta: no apply for %T", c))
}

func lower(s string) string { return strings.ToLower(s) }

func (tx *Tx) userCreate(c *UserCreate) error {
	u := c.User
	if u.ID == "" || u.Username == "" {
		return fmt.Errorf("%w: user id and username required", ErrInvalid)
	}
	if tx.index(bUserNames, []byte(lower(u.Username))) != "" {
		return Conflictf("username %q is taken", u.Username)
	}
	if tx.tx.Bucket(bUsers).Get([]byte(u.ID)) != nil {
		return Conflictf("user id %q exists", u.ID)
	}
	if err := tx.put(bUsers, u.ID, u); err != nil {
		return err
	}
	return tx.tx.Bucket(bUserNames).Put([]byte(lower(u.Username)), []byte(u.ID))
}

func (tx *Tx) userUpdate(c *UserUpdate) error {
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	if c.Email != nil {
		u.Email = *c.Email
	}
	if c.PasswordHash != nil {
		u.PasswordHash = *c.PasswordHash
	}
	if c.Role != nil {
		if *c.Role != RoleAdmin {
			if err := tx.keepAdmin(u); err != nil {
				return err
			}
		}
		u.Role = *c.Role
	}
	if c.MustChangePassword != nil {
		u.MustChangePassword = *c.MustChangePassword
	}
	u.UpdatedAt = c.At
	if c.RevokeSessions {
		live, err := ids(tx, bSessions, func(s *Session) bool {
			return s.UserID == u.ID && s.ID != c.KeepSession && s.RevokedAt == nil
		}, sessionID)
		if err != nil {
			return err
		}
		for _, id := range live {
			if err := tx.sessionRevoke(&SessionRevoke{ID: id, At: c.At}); err != nil {
				return err
			}
		}
	}
	return tx.put(bUsers, u.ID, u)
}

func (tx *Tx) userDelete(c *UserDelete) error {
	u, err := tx.User(c.ID)
	if err != nil {
		return err
	}
	if err := tx.keepAdmin(u); err != nil {
		return err
	}
	toks, err := tx.TokensOf(u.ID)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if err := tx.dropToken(&t); err != nil {
			return err
		}
	}
	sessions, err := ids(tx, bSessions, func(s *Session) bool { return s.UserID == u.ID }, sessionID)
	if err != nil {
		return err
	}
	perms, err := ids(tx, bPermissions, func(p *Permission) bool { return p.UserID == u.ID }, permissionID)
	if err != nil {
		return err
	}
	var groups []Group
	if err := each(tx, bGroups, func(g *Group) error {
		if i := sort.SearchStrings(g.Members, u.ID); i < len(g.Members) && g.Members[i] == u.ID {
			g.Members = append(g.Members[:i], g.Members[i+1:]...)
			groups = append(groups, *g)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := tx.delAll(bSessions, sessions); err != nil {
		return err
	}
	if err := tx.delAll(bPermissions, perms); err != nil {
		return err
	}
	for _, g := range groups {
		if err := tx.put(bGroups, g.ID, g); err != nil {
			return err
		}
	}
	if err := tx.del(bUserNames, []byte(lower(u.Username))); err != nil {
		return err
	}
	return tx.del(bUsers, []byte(u.ID))
}

// keepAdmin refuses to take the admin role away from u (delete or
// demotion) when no other administrator would remain. It is checked here,
// in the command, and not only by the handler that decided: two admins
// removing each other at once both read "two admins" before either
// commits, and only the log order can tell which one comes second.
func (tx *Tx) keepAdmin(u *User) error {
	if u.Role != RoleAdmin {
		return nil
	}
	other := false
	err := each(tx, bUsers, func(o *User) error {
		if o.ID != u.ID && o.Role == RoleAdmin {
			other = true
			return errStop
		}
		return nil
	})
	switch {
	case other:
		return nil
	case err != nil:
		return err
	}
	return ErrLastAdmin
}

func (tx *Tx) tokenCreate(c *TokenCreate) error {
	t := c.Token
	if _, err := tx.User(t.UserID); err != nil {
		return err
	}
	if t.ID == "" || t.Hash == "" {
		return fmt.Errorf("%w: token id and hash required", ErrInvalid)
	}
	if tx.index(bTokenHashes, []byte(t.Hash)) != "" || tx.tx.Bucket(bTokens).Get([]byte(t.ID)) != nil {
		return Conflictf("token exists")
	}
	if err := tx.put(bTokens, t.ID, t); err != nil {
		return err
	}
	return tx.tx.Bucket(bTokenHashes).Put([]byte(t.Hash), []byte(t.ID))
}

func (tx *Tx) tokenRevoke(c *TokenRevoke) error {
	var t Token
	if err := tx.get(bTokens, c.ID, &t); err != nil || t.UserID != c.UserID {
		return NotFoundf("token %s", c.ID)
	}
	return tx.dropToken(&t)
}

func (tx *Tx) dropToken(t *Token) error {
	if err := tx.del(bTokenHashes, []byte(t.Hash)); err != nil {
		return err
	}
	return tx.del(bTokens, []byte(t.ID))
}

func (tx *Tx) sessionCreate(c *SessionCreate) error {
	if _, err := tx.User(c.Session.UserID); err != nil {
		return err
	}
	if tx.tx.Bucket(bSessions).Get([]byte(c.Session.ID)) != nil {
		return Conflictf("session exists")
	}
	return tx.put(bSessions, c.Session.ID, c.Session)
}

func (tx *Tx) sessionRevoke(c *SessionRevoke) error {
	var s Session
	if err := tx.get(bSessions, c.ID, &s); err != nil {
		return NotFoundf("session %s", c.ID)
	}
	if s.RevokedAt != nil {
		return nil
	}
	at := c.At
	s.RevokedAt = &at
	return tx.put(bSessions, s.ID, s)
}

func (tx *Tx) sessionPurge(c *SessionPurge) error {
	expired, err := ids(tx, bSessions, func(s *Session) bool { return s.ExpiresAt.Before(c.Before) }, sessionID)
	if err != nil {
		return err
	}
	return tx.delAll(bSessions, expired)
}

func (tx *Tx) groupCreate(c *GroupCreate) error {
	g := c.Group
	if g.ID == "" || g.Name == "" {
		return fmt.Errorf("%w: group id and name required", ErrInvalid)
	}
	if tx.index(bGroupNames, []byte(lower(g.Name))) != "" {
		return Conflictf("group %q exists", g.Name)
	}
	if g.Members == nil {
		g.Members = []string{}
	}
	if err := tx.put(bGroups, g.ID, g); err != nil {
		return err
	}
	return tx.tx.Bucket(bGroupNames).Put([]byte(lower(g.Name)), []byte(g.ID))
}

func (tx *Tx) groupAddMembers(c *GroupAddMembers) error {
	g, err := tx.Group(c.GroupID)
	if err != nil {
		return err
	}
	for _, id := range c.UserIDs {
		if _, err := tx.User(id); err != nil {
			return NotFoundf("user %s", id)
		}
	}
	set := map[string]bool{}
	for _, id := range g.Members {
		set[id] = true
	}
	for _, id := range c.UserIDs {
		if !set[id] {
			set[id] = true
			g.Members = append(g.Members, id)
		}
	}
	sort.Strings(g.Members)
	return tx.put(bGroups, g.ID, g)
}

func (tx *Tx) permissionCreate(c *PermissionCreate) error {
	p := c.Permission
	if _, err := tx.Repo(p.RepositoryID); err != nil {
		return err
	}
	switch {
	case p.UserID != "" && p.GroupID == "":
		if _, err := tx.User(p.UserID); err != nil {
			return err
		}
	case p.GroupID != "" && p.UserID == "":
		if _, err := tx.Group(p.GroupID); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: exactly one of user_id and group_id", ErrInvalid)
	}
	if p.ID == "" || tx.tx.Bucket(bPermissions).Get([]byte(p.ID)) != nil {
		return Conflictf("permission id %q", p.ID)
	}
	return tx.put(bPermissions, p.ID, p)
}

func (tx *Tx) permissionDelete(c *PermissionDelete) error {
	if tx.tx.Bucket(bPermissions).Get([]byte(c.ID)) == nil {
		return NotFoundf("permission %s", c.ID)
	}
	return tx.del(bPermissions, []byte(c.ID))
}

func (tx *Tx) repoCreate(c *RepoCreate) error {
	r := c.Repo
	if r.ID == "" || r.Name == "" {
		return fmt.Errorf("%w: repository id and name required", ErrInvalid)
	}
	if tx.index(bRepoNames, []byte(lower(r.Name))) != "" {
		return Conflictf("repository %q exists", r.Name)
	}
	if tx.tx.Bucket(bRepos).Get([]byte(r.ID)) != nil {
		return Conflictf("repository id %q exists", r.ID)
	}
	if g := c.CreatorGrant; g != nil {
		if _, err := tx.User(g.UserID); err != nil {
			return err
		}
	}
	r.ArtifactCount, r.SizeBytes = 0, 0
	if err := tx.put(bRepos, r.ID, r); err != nil {
		return err
	}
	if err := tx.tx.Bucket(bRepoNames).Put([]byte(lower(r.Name)), []byte(r.ID)); err != nil {
		return err
	}
	if c.CreatorGrant != nil {
		g := *c.CreatorGrant
		g.RepositoryID = r.ID
		return tx.permissionCreate(&PermissionCreate{Permission: g})
	}
	return nil
}

func (tx *Tx) repoUpdate(c *RepoUpdate) error {
	r, err := tx.Repo(c.ID)
	if err != nil {
		return err
	}
	if c.Description != nil {
		r.Description = *c.Description
	}
	if c.Public != nil {
		r.Public = *c.Public
	}
	if len(c.Settings) > 0 {
		if r.Settings == nil {
			r.Settings = map[string]string{}
		}
		for k, v := range c.Settings { // map order does not matter: each key is set once
			if v == "" {
				delete(r.Settings, k)
			} else {
				r.Settings[k] = v
			}
		}
	}
	r.UpdatedAt = c.At
	return tx.put(bRepos, r.ID, r)
}

func (tx *Tx) repoDelete(c *RepoDelete) error {
	r, err := tx.Repo(c.ID)
	if err != nil {
		return err
	}
	prefix := key(r.ID, "")
	var arts [][]byte
	cur := tx.tx.Bucket(bArtifactPaths).Cursor()
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		arts = append(arts, append([]byte(nil), v...))
	}
	for _, id := range arts {
		if err := tx.dropArtifact(string(id), false); err != nil {
			return err
		}
	}
	perms, err := ids(tx, bPermissions, func(p *Permission) bool { return p.RepositoryID == r.ID }, permissionID)
	if err != nil {
		return err
	}
	if err := tx.delAll(bPermissions, perms); err != nil {
		return err
	}
	var kv [][]byte
	cur = tx.tx.Bucket(bFormatKV).Cursor()
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		kv = append(kv, append([]byte(nil), k...))
	}
	for _, k := range kv {
		if err := tx.del(bFormatKV, k); err != nil {
			return err
		}
	}
	if err := tx.del(bRepoNames, []byte(lower(r.Name))); err != nil {
		return err
	}
	return tx.del(bRepos, []byte(r.ID))
}

func (tx *Tx) artifactPut(c *ArtifactPut) error {
	a := c.Artifact
	r, err := tx.Repo(a.RepositoryID)
	if err != nil {
		return err
	}
	if a.ID == "" || a.Path == "" || a.Digest == "" {
		return fmt.Errorf("%w: artifact id, path and digest required", ErrInvalid)
	}
	if err := checkKV(c.KV); err != nil {
		return err
	}
	if tx.tx.Bucket(bArtifacts).Get([]byte(a.ID)) != nil {
		return Conflictf("artifact id %q exists", a.ID)
	}
	if old := tx.index(bArtifactPaths, key(r.ID, a.Path)); old != "" {
		if !c.Replace {
			return Conflictf("%s already exists in repository %s", a.Path, r.Name)
		}
		if err := tx.dropArtifact(old, true); err != nil {
			return err
		}
		if r, err = tx.Repo(a.RepositoryID); err != nil {
			return err
		}
	}
	a.Format = r.Format
	if err := tx.put(bArtifacts, a.ID, a); err != nil {
		return err
	}
	if err := tx.tx.Bucket(bArtifactPaths).Put(key(r.ID, a.Path), []byte(a.ID)); err != nil {
		return err
	}
	if err := tx.tx.Bucket(bArtifactPkgs).Put(key(r.ID, a.PackageName, a.Version, a.ID), nil); err != nil {
		return err
	}
	r.ArtifactCount++
	r.SizeBytes += a.SizeBytes
	if err := tx.put(bRepos, r.ID, r); err != nil {
		return err
	}
	return tx.kvApply(r.ID, c.KV)
}

func (tx *Tx) artifactDelete(c *ArtifactDelete) error {
	all := c.IDs
	if c.ID != "" {
		all = append([]string{c.ID}, c.IDs...)
	}
	repoID := c.RepoID
	for _, id := range all {
		a, err := tx.Artifact(id)
		if err != nil {
			return err
		}
		if repoID == "" {
			repoID = a.RepositoryID
		}
		if a.RepositoryID != repoID {
			return fmt.Errorf("%w: artifacts of several repositories in one delete", ErrInvalid)
		}
	}
	if len(c.KV) > 0 {
		if c.RepoID == "" {
			return fmt.Errorf("%w: repo_id required with kv", ErrInvalid)
		}
		if _, err := tx.Repo(c.RepoID); err != nil {
			return err
		}
		if err := checkKV(c.KV); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, id := range all {
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := tx.dropArtifact(id, true); err != nil {
			return err
		}
	}
	return tx.kvApply(c.RepoID, c.KV)
}

func (tx *Tx) artifactsApply(c *ArtifactsApply) error {
	r, err := tx.Repo(c.RepoID)
	if err != nil {
		return err
	}
	if err := checkKV(c.KV); err != nil {
		return err
	}
	dropping := map[string]bool{}
	for _, id := range c.Drop {
		a, err := tx.Artifact(id)
		if err != nil {
			return err
		}
		if a.RepositoryID != r.ID {
			return fmt.Errorf("%w: artifact %s is not in repository %s", ErrInvalid, id, r.Name)
		}
		dropping[id] = true
	}
	paths := map[string]bool{}
	for _, a := range c.Put {
		switch {
		case a.RepositoryID != r.ID:
			return fmt.Errorf("%w: artifact %s is not in repository %s", ErrInvalid, a.ID, r.Name)
		case a.ID == "" || a.Path == "" || a.Digest == "":
			return fmt.Errorf("%w: artifact id, path and digest required", ErrInvalid)
		case paths[a.Path]:
			return fmt.Errorf("%w: %s put twice", ErrInvalid, a.Path)
		case tx.tx.Bucket(bArtifacts).Get([]byte(a.ID)) != nil:
			return Conflictf("artifact id %q exists", a.ID)
		}
		paths[a.Path] = true
	}
	for _, id := range c.Drop {
		if err := tx.dropArtifact(id, true); err != nil {
			return err
		}
	}
	for _, a := range c.Put {
		if err := tx.artifactPut(&ArtifactPut{Artifact: a, Replace: true}); err != nil {
			return err
		}
	}
	return tx.kvApply(r.ID, c.KV)
}

// checkKV validates ops before anything is written.
func checkKV(ops []KVOp) error {
	for _, op := range ops {
		if op.Key == "" || strings.ContainsRune(op.Key, 0) {
			return fmt.Errorf("%w: empty or malformed kv key", ErrInvalid)
		}
	}
	return nil
}

// kvApply sets or deletes keys of a repository's format keyspace; checkKV
// has validated them.
func (tx *Tx) kvApply(repoID string, ops []KVOp) error {
	if err := checkKV(ops); err != nil {
		return err
	}
	b := tx.tx.Bucket(bFormatKV)
	for _, op := range ops {
		k := key(repoID, op.Key)
		var err error
		if len(op.Value) == 0 {
			err = b.Delete(k)
		} else {
			err = b.Put(k, op.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dropArtifact removes an artifact and its index entries; with account set
// the repository's counters follow.
func (tx *Tx) dropArtifact(id string, account bool) error {
	a, err := tx.Artifact(id)
	if err != nil {
		return err
	}
	if err := tx.del(bArtifactPaths, key(a.RepositoryID, a.Path)); err != nil {
		return err
	}
	if err := tx.del(bArtifactPkgs, key(a.RepositoryID, a.PackageName, a.Version, a.ID)); err != nil {
		return err
	}
	if err := tx.del(bArtifacts, []byte(a.ID)); err != nil {
		return err
	}
	if !account {
		return nil
	}
	r, err := tx.Repo(a.RepositoryID)
	if err != nil {
		return err
	}
	r.ArtifactCount--
	r.SizeBytes -= a.SizeBytes
	return tx.put(bRepos, r.ID, r)
}

// ids collects the ids of the records of a bucket that match.
func ids[T any](tx *Tx, bucket []byte, match func(*T) bool, id func(*T) string) ([]string, error) {
	var out []string
	err := each(tx, bucket, func(v *T) error {
		if match(v) {
			out = append(out, id(v))
		}
		return nil
	})
	return out, err
}

// delAll deletes keys from a bucket.
func (tx *Tx) delAll(bucket []byte, keys []string) error {
	for _, k := range keys {
		if err := tx.del(bucket, []byte(k)); err != nil {
			return err
		}
	}
	return nil
}

func sessionID(s *Session) string       { return s.ID }
func permissionID(p *Permission) string { return p.ID }
