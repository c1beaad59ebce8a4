package meta

import (
	"encoding/json"
	"errors"
	"time"
)

// The repository kind and its commands.
const (
	KindRepo       Kind    = 6
	SpaceRepoNames Space   = 22 // lower(name) -> repository id
	CmdRepoCreate  CmdType = 12
	CmdRepoUpdate  CmdType = 13
	CmdRepoDelete  CmdType = 14
)

var (
	bRepoStats   = []byte("repo_stats")   // repo id -> repoStats JSON
	bPublicRepos = []byte("public_repos") // repo id -> ""
)

func init() {
	declareKind(KindRepo, kindDecl{Name: "repositories", Bucket: "repos", Repo: func(key string, _ []byte) string { return key },
		Index: indexRepo, Derived: [][]byte{bRepoStats, bPublicRepos},
		Lookups: []lookupDecl{{SpaceRepoNames, "repository names", "repo_names"}}})
	declareCommand(CmdRepoCreate, func() Command { return new(RepoCreate) })
	declareCommand(CmdRepoUpdate, func() Command { return new(RepoUpdate) })
	declareCommand(CmdRepoDelete, func() Command { return new(RepoDelete) })
}

// Repository holds artifacts of one format. ArtifactCount and SizeBytes are
// derived from its artifacts when it is read; the record does not keep
// them, so that an upload does not change the repository's modify index.
type Repository struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Format      string            `json:"format"`
	Description string            `json:"description"`
	Public      bool              `json:"public"`
	Settings    map[string]string `json:"settings,omitempty"`
	// Retention is the repository's own retention rule (RepoRetain);
	// nil: the installation's default.
	Retention     *Retention `json:"retention,omitempty"`
	CreatedBy     string     `json:"created_by,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	ArtifactCount int64      `json:"artifact_count"`
	SizeBytes     int64      `json:"size_bytes"`
}

// WithoutTotals is r as its record keeps it, without the totals read with
// it: what is remembered for as long as the record stays the same (the
// totals change with every artifact).
func (r Repository) WithoutTotals() Repository {
	r.ArtifactCount, r.SizeBytes = 0, 0
	return r
}

// repoStats are a repository's totals, kept by the artifact index hook.
type repoStats struct {
	Artifacts int64 `json:"artifacts"`
	Size      int64 `json:"size"`
	Packages  int64 `json:"packages"`
}

// Stats are totals over the whole store.
type Stats struct {
	Repositories   int64 `json:"repositories"`
	Artifacts      int64 `json:"artifacts"`
	TotalSizeBytes int64 `json:"total_size_bytes"`
	Users          int64 `json:"users"`
}

// RepoCreate adds a repository. When CreatorGrant is set it is stored with
// the repository, in the same command (the creator's admin grant).
type RepoCreate struct {
	Repo         Repository  `json:"repo"`
	CreatorGrant *Permission `json:"creator_grant,omitempty"`
	Actor        *Actor      `json:"actor,omitempty"`
}

// RepoUpdate changes the given fields of a repository.
type RepoUpdate struct {
	ID          string            `json:"id"`
	Description *string           `json:"description,omitempty"`
	Public      *bool             `json:"public,omitempty"`
	Settings    map[string]string `json:"settings,omitempty"`
	At          time.Time         `json:"at"`
}

// RepoDelete removes a repository, its artifacts, its format keys and its
// grants.
type RepoDelete struct {
	ID    string    `json:"id"`
	Actor *Actor    `json:"actor,omitempty"`
	At    time.Time `json:"at,omitempty"`
}

func (*RepoCreate) Type() CmdType   { return CmdRepoCreate }
func (*RepoUpdate) Type() CmdType   { return CmdRepoUpdate }
func (*RepoDelete) Type() CmdType   { return CmdRepoDelete }
func (c *RepoCreate) Scope() string { return c.Repo.ID }
func (c *RepoUpdate) Scope() string { return c.ID }
func (c *RepoDelete) Scope() string { return c.ID }

func (c *RepoCreate) apply(tx *Tx) error {
	r := c.Repo
	if r.ID == "" || r.Name == "" {
		return Invalidf("repository id and name required")
	}
	if id, _ := tx.lookup(SpaceRepoNames, lower(r.Name)); id != nil {
		return Conflictf("repository %q exists", r.Name)
	}
	if tx.exists(KindRepo, r.ID) {
		return Conflictf("repository id %q exists", r.ID)
	}
	if err := tx.putRepo(&r); err != nil {
		return err
	}
	if err := tx.emitRepo(EventRepoCreated, &r, c.Actor, r.CreatedAt); err != nil {
		return err
	}
	if c.CreatorGrant != nil {
		g := *c.CreatorGrant
		g.RepositoryID = r.ID
		return (&PermissionCreate{Permission: g}).apply(tx)
	}
	return nil
}

func (tx *Tx) putRepo(r *Repository) error {
	return tx.putRec(KindRepo, r.ID, r.WithoutTotals())
}

func (c *RepoUpdate) apply(tx *Tx) error {
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
	return tx.putRepo(r)
}

func (c *RepoDelete) apply(tx *Tx) error {
	r, err := tx.Repo(c.ID)
	if err != nil {
		return err
	}
	if err := tx.unassignEverywhere(r.ID); err != nil {
		return err
	}
	if err := tx.emitRepo(EventRepoDeleted, r, c.Actor, c.At); err != nil {
		return err
	}
	return tx.dropRepo(r.ID)
}

func indexRepo(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Repository](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceRepoNames).Delete([]byte(lower(o.Name))); err != nil {
			return err
		}
		if err := tx.delKey(bPublicRepos, id); err != nil {
			return err
		}
	}
	if n != nil {
		if n.Public {
			if err := tx.setKey(bPublicRepos, id); err != nil {
				return err
			}
		}
		return tx.setIndexEntry(SpaceRepoNames, lower(n.Name), []byte(id))
	}
	// The stats go with the last artifact; a repository deleted with
	// artifacts left would be a bug in RepoDelete.
	return tx.delKey(bRepoStats, id)
}

// repoStats are repository id's totals; in a view they are remembered
// until the repository's artifacts change (setRepoStats notes that).
func (tx *Tx) repoStats(id string) repoStats {
	read := func(tx *Tx) (repoStats, bool, error) {
		var s repoStats
		if raw := tx.bucket(bRepoStats).Get([]byte(id)); raw != nil {
			_ = json.Unmarshal(raw, &s)
		}
		return s, true, nil
	}
	if tx.store == nil {
		s, _, _ := read(tx)
		return s
	}
	s, _ := tx.store.statsMemo().In(tx, id, id, read)
	return s
}

// setRepoStats changes the totals, always within a write of the
// repository's artifacts (indexArtifact), which notes KindArtifact for it:
// what the remembered totals follow.
func (tx *Tx) setRepoStats(id string, s repoStats) error {
	if s == (repoStats{}) {
		return tx.delKey(bRepoStats, id)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.bucket(bRepoStats).Put([]byte(id), raw)
}

// Repo returns a repository by id.
func (tx *Tx) Repo(id string) (*Repository, error) {
	r, err := getRec[Repository](tx, KindRepo, id, "repository")
	if err != nil {
		return nil, err
	}
	st := tx.repoStats(id)
	r.ArtifactCount, r.SizeBytes = st.Artifacts, st.Size
	return r, nil
}

// RepoByName returns a repository by name, case-insensitively.
func (tx *Tx) RepoByName(name string) (*Repository, error) {
	id, _ := tx.lookup(SpaceRepoNames, lower(name))
	if id == nil {
		return nil, NotFoundf("repository %s", name)
	}
	return tx.Repo(string(id))
}

// RepoByRef returns a repository by id or, when no repository has that
// id, by name (names are unique): the REST API takes either.
func (tx *Tx) RepoByRef(ref string) (*Repository, error) {
	r, err := tx.Repo(ref)
	if errors.Is(err, ErrNotFound) {
		if byName, nerr := tx.RepoByName(ref); nerr == nil {
			return byName, nil
		}
	}
	return r, err
}

// Repos lists repositories ordered by name.
func (tx *Tx) Repos() ([]Repository, error) { return byName(tx, SpaceRepoNames, tx.Repo) }

// Stats totals the store.
func (tx *Tx) Stats() (Stats, error) {
	var s Stats
	s.Users = int64(tx.Count(KindUser))
	s.Repositories = int64(tx.Count(KindRepo))
	err := tx.bucket(bRepoStats).ForEach(func(_, raw []byte) error {
		var st repoStats
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		s.Artifacts += st.Artifacts
		s.TotalSizeBytes += st.Size
		return nil
	})
	return s, err
}
