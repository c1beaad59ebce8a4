package meta

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// User returns a user by id.
func (tx *Tx) User(id string) (*User, error) { return byID[User](tx, bUsers, id, "user") }

// UserByName returns a user by username, case-insensitively.
func (tx *Tx) UserByName(name string) (*User, error) {
	id := tx.index(bUserNames, []byte(lower(name)))
	if id == "" {
		return nil, NotFoundf("user %s", name)
	}
	return tx.User(id)
}

// Users lists all users ordered by username.
func (tx *Tx) Users() ([]User, error) {
	return sorted(tx, bUsers, func(v *User) string { return lower(v.Username) })
}

// TokenByHash returns the token whose secret hashes to hash.
func (tx *Tx) TokenByHash(hash string) (*Token, error) {
	id := tx.index(bTokenHashes, []byte(hash))
	if id == "" {
		return nil, NotFoundf("token")
	}
	var t Token
	if err := tx.get(bTokens, id, &t); err != nil {
		return nil, NotFoundf("token")
	}
	return &t, nil
}

// TokenByID returns a token by id.
func (tx *Tx) TokenByID(id string) (*Token, error) { return byID[Token](tx, bTokens, id, "token") }

// TokensOf lists a user's tokens, oldest first.
func (tx *Tx) TokensOf(userID string) ([]Token, error) {
	var out []Token
	err := each(tx, bTokens, func(t *Token) error {
		if t.UserID == userID {
			out = append(out, *t)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

// Session returns a session by id.
func (tx *Tx) Session(id string) (*Session, error) {
	return byID[Session](tx, bSessions, id, "session")
}

// Group returns a group by id.
func (tx *Tx) Group(id string) (*Group, error) { return byID[Group](tx, bGroups, id, "group") }

// Groups lists all groups ordered by name.
func (tx *Tx) Groups() ([]Group, error) {
	return sorted(tx, bGroups, func(v *Group) string { return lower(v.Name) })
}

// GroupsOf lists the ids of the groups a user belongs to.
func (tx *Tx) GroupsOf(userID string) ([]string, error) {
	var out []string
	err := each(tx, bGroups, func(g *Group) error {
		if i := sort.SearchStrings(g.Members, userID); i < len(g.Members) && g.Members[i] == userID {
			out = append(out, g.ID)
		}
		return nil
	})
	return out, err
}

// Permission returns a grant by id.
func (tx *Tx) Permission(id string) (*Permission, error) {
	return byID[Permission](tx, bPermissions, id, "permission")
}

// Permissions lists grants, filtered by fn when it is not nil, oldest first.
func (tx *Tx) Permissions(fn func(*Permission) bool) ([]Permission, error) {
	var out []Permission
	err := each(tx, bPermissions, func(p *Permission) error {
		if fn == nil || fn(p) {
			out = append(out, *p)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

// Repo returns a repository by id.
func (tx *Tx) Repo(id string) (*Repository, error) {
	return byID[Repository](tx, bRepos, id, "repository")
}

// RepoByName returns a repository by name, case-insensitively.
func (tx *Tx) RepoByName(name string) (*Repository, error) {
	id := tx.index(bRepoNames, []byte(lower(name)))
	if id == "" {
		return nil, NotFoundf("repository %s", name)
	}
	return tx.Repo(id)
}

// Repos lists repositories ordered by name.
func (tx *Tx) Repos() ([]Repository, error) {
	return sorted(tx, bRepos, func(v *Repository) string { return lower(v.Name) })
}

// Artifact returns an artifact by id.
func (tx *Tx) Artifact(id string) (*Artifact, error) {
	return byID[Artifact](tx, bArtifacts, id, "artifact")
}

// ArtifactByPath returns the artifact at path in a repository.
func (tx *Tx) ArtifactByPath(repoID, path string) (*Artifact, error) {
	id := tx.index(bArtifactPaths, key(repoID, path))
	if id == "" {
		return nil, NotFoundf("%s", path)
	}
	return tx.Artifact(id)
}

// ArtifactsUnder lists the artifacts of a repository whose path starts
// with prefix, in path order.
func (tx *Tx) ArtifactsUnder(repoID, prefix string) ([]Artifact, error) {
	var out []Artifact
	p := key(repoID, prefix)
	cur := tx.tx.Bucket(bArtifactPaths).Cursor()
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		a, err := tx.Artifact(string(v))
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// PackageFilter narrows Packages.
type PackageFilter struct {
	RepoIDs []string // nil = all repositories
	Format  string
	Query   string // case-insensitive substring of the name
	Name    string // exact name
}

// Packages aggregates artifacts into packages, ordered by name then
// repository.
func (tx *Tx) Packages(f PackageFilter) ([]PackageSummary, error) {
	allowed := map[string]bool{}
	for _, id := range f.RepoIDs {
		allowed[id] = true
	}
	type agg struct {
		PackageSummary
		versions map[string]bool
		latestAt int64
	}
	byKey := map[string]*agg{}
	var keys []string
	q := lower(f.Query)
	err := tx.tx.Bucket(bArtifactPkgs).ForEach(func(k, _ []byte) error {
		parts := strings.SplitN(string(k), "\x00", 4)
		if len(parts) != 4 {
			return nil
		}
		repoID, name, version, artID := parts[0], parts[1], parts[2], parts[3]
		if f.RepoIDs != nil && !allowed[repoID] {
			return nil
		}
		if (f.Name != "" && name != f.Name) || (q != "" && !strings.Contains(lower(name), q)) {
			return nil
		}
		a, err := tx.Artifact(artID)
		if err != nil {
			return err
		}
		if f.Format != "" && a.Format != f.Format {
			return nil
		}
		k2 := repoID + "\x00" + name
		p := byKey[k2]
		if p == nil {
			p = &agg{PackageSummary: PackageSummary{Name: name, RepositoryID: repoID, Format: a.Format}, versions: map[string]bool{}}
			byKey[k2] = p
			keys = append(keys, k2)
		}
		p.versions[version] = true
		p.TotalSizeBytes += a.SizeBytes
		if t := a.UploadedAt.UnixNano(); t >= p.latestAt {
			p.latestAt = t
			p.LatestVersion = version
			p.LastUpdated = a.UploadedAt
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]PackageSummary, 0, len(keys))
	for _, k := range keys {
		p := byKey[k]
		p.VersionCount = len(p.versions)
		out = append(out, p.PackageSummary)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].RepositoryID < out[j].RepositoryID
	})
	return out, nil
}

// Versions lists the versions of a package in one repository, newest
// upload first.
func (tx *Tx) Versions(repoID, name string) ([]VersionSummary, error) {
	p := key(repoID, name, "")
	byVersion := map[string]*VersionSummary{}
	var order []string
	cur := tx.tx.Bucket(bArtifactPkgs).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		parts := strings.SplitN(string(k[len(p):]), "\x00", 2)
		if len(parts) != 2 {
			continue
		}
		a, err := tx.Artifact(parts[1])
		if err != nil {
			return nil, err
		}
		v := byVersion[parts[0]]
		if v == nil {
			v = &VersionSummary{Version: parts[0], ArtifactID: a.ID, RepositoryID: repoID, UploadedAt: a.UploadedAt}
			byVersion[parts[0]] = v
			order = append(order, parts[0])
		}
		v.SizeBytes += a.SizeBytes
		v.FileCount++
		if a.UploadedAt.After(v.UploadedAt) {
			v.UploadedAt = a.UploadedAt
		}
	}
	out := make([]VersionSummary, 0, len(order))
	for _, k := range order {
		out = append(out, *byVersion[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UploadedAt.After(out[j].UploadedAt) })
	return out, nil
}

// Stats totals the store.
func (tx *Tx) Stats() (Stats, error) {
	var s Stats
	s.Users = int64(tx.tx.Bucket(bUsers).Stats().KeyN)
	err := each(tx, bRepos, func(r *Repository) error {
		s.Repositories++
		s.Artifacts += r.ArtifactCount
		s.TotalSizeBytes += r.SizeBytes
		return nil
	})
	return s, err
}

// HasUsers reports whether any user exists (first start creates the admin).
func (tx *Tx) HasUsers() bool {
	k, _ := tx.tx.Bucket(bUsers).Cursor().First()
	return k != nil
}

// byID reads one record of a bucket; absent is ErrNotFound naming what.
func byID[T any](tx *Tx, bucket []byte, id, what string) (*T, error) {
	var v T
	if err := tx.get(bucket, id, &v); err != nil {
		return nil, NotFoundf("%s %s", what, id)
	}
	return &v, nil
}

// sorted lists every record of a bucket ordered by a key.
func sorted[T any](tx *Tx, bucket []byte, key func(*T) string) ([]T, error) {
	var out []T
	err := each(tx, bucket, func(v *T) error { out = append(out, *v); return nil })
	sort.SliceStable(out, func(i, j int) bool { return key(&out[i]) < key(&out[j]) })
	return out, err
}

// KV reads one key of a repository's format keyspace.
func (tx *Tx) KV(repoID, k string) (json.RawMessage, bool) {
	v := tx.tx.Bucket(bFormatKV).Get(key(repoID, k))
	if v == nil {
		return nil, false
	}
	return append(json.RawMessage(nil), v...), true
}

// KVList lists the keys of a repository's format keyspace under prefix,
// in key order.
func (tx *Tx) KVList(repoID, prefix string) []KVPair {
	var out []KVPair
	p := key(repoID, prefix)
	strip := len(key(repoID, ""))
	cur := tx.tx.Bucket(bFormatKV).Cursor()
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		out = append(out, KVPair{Key: string(k[strip:]), Value: append(json.RawMessage(nil), v...)})
	}
	return out
}
