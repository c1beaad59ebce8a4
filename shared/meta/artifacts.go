package meta

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// The artifact kind and its commands.
const (
	KindArtifact       Kind    = 7
	SpaceArtifactPaths Space   = 23 // repo \0 path -> artifact id
	SpaceArtifactPkgs  Space   = 24 // repo \0 package \0 version \0 artifact id -> uploaded-at, size
	CmdArtifactPut     CmdType = 15
	CmdArtifactDelete  CmdType = 16
	CmdArtifactsApply  CmdType = 19
)

var (
	bPackages   = []byte("packages")    // repo \0 name -> PackageSummary JSON
	bBlobRefs   = []byte("blob_refs")   // digest \0 kind \0 key -> index of the reference
	bRefOrder   = []byte("ref_order")   // index of the reference, digest \0 kind \0 key -> ""
	bPkgGrams   = []byte("pkg_grams")   // trigram \0 name \0 repo -> ""
	bGramCounts = []byte("gram_counts") // trigram -> how many packages have it (uint64)
)

func init() {
	declareKind(KindArtifact, kindDecl{Name: "artifacts", Bucket: "artifacts", Repo: artifactRepo, Index: indexArtifact,
		Derived: [][]byte{bPackages, bBlobRefs, bRefOrder, bPkgGrams, bGramCounts, bChecksums, bPkgNames, bFileNames},
		Lookups: []lookupDecl{{SpaceArtifactPaths, "artifact paths", "artifact_paths"}, {SpaceArtifactPkgs, "package versions", "artifact_pkgs"}}})
	declareCommand(CmdArtifactPut, func() Command { return new(ArtifactPut) })
	declareCommand(CmdArtifactDelete, func() Command { return new(ArtifactDelete) })
	declareCommand(CmdArtifactsApply, func() Command { return new(ArtifactsApply) })
}

// Artifact is one stored file. Path is unique within its repository and is
// chosen by the format (generic: package/version/filename). Artifacts are
// never changed in place: replacing one records a new artifact.
type Artifact struct {
	ID           string         `json:"id"`
	RepositoryID string         `json:"repository_id"`
	Path         string         `json:"path"`
	PackageName  string         `json:"package_name"`
	Version      string         `json:"version"`
	Format       string         `json:"format"`
	SizeBytes    int64          `json:"size_bytes"`
	Digest       string         `json:"digest"` // blob address
	Checksums    blob.Checksums `json:"checksums"`
	ContentType  string         `json:"content_type,omitempty"`
	UploadedAt   time.Time      `json:"uploaded_at"`
	UploadedBy   string         `json:"uploaded_by"`
	UploaderID   string         `json:"uploader_id,omitempty"`
	// Attrs is the format's own record of the file (an npm version
	// manifest, a wheel's metadata, an OCI media type...), opaque here.
	Attrs json.RawMessage `json:"attrs,omitempty"`
	// Refs are other blobs this artifact needs (a wheel's extracted
	// METADATA): garbage collection keeps them as long as the artifact.
	Refs []string `json:"refs,omitempty"`
	// Companion: a file that goes with its version's main file (a go.mod
	// beside its module zip, a .nuspec beside its .nupkg, a POM or a
	// sources jar beside a jar): never named as the version's file while
	// another is there. What deleting one removes is its format's rule.
	Companion bool `json:"companion,omitempty"`
	// Properties are the artifact's key → values metadata (properties.go).
	Properties map[string][]string `json:"properties,omitempty"`
}

// ArtifactPut records an artifact whose blob is already durable. An
// artifact at the same path is a conflict unless Replace is set. KV ops of
// the artifact's repository apply in the same command.
type ArtifactPut struct {
	Artifact Artifact `json:"artifact"`
	Replace  bool     `json:"replace,omitempty"`
	KV       []KVOp   `json:"kv,omitempty"`
}

// ArtifactDelete removes the metadata of artifact ID and of IDs (all of
// one repository, or the command is refused), then applies KV ops to
// RepoID (which must be set when KV is).
type ArtifactDelete struct {
	ID     string    `json:"id,omitempty"`
	IDs    []string  `json:"ids,omitempty"`
	RepoID string    `json:"repo_id,omitempty"`
	KV     []KVOp    `json:"kv,omitempty"`
	Actor  *Actor    `json:"actor,omitempty"`
	At     time.Time `json:"at,omitempty"`
}

// ArtifactsApply changes several artifacts of one repository and its
// format keyspace at once: Drop removes artifacts (by id), then each of Put
// is stored, replacing whatever is at its path, then KV applies. Formats
// whose one client action touches several records (an OCI tag moving from
// one manifest to another) stay a single command. Each put records an
// artifact.uploaded event and each drop an artifact.deleted, except the
// artifacts named in Quiet: the format's bookkeeping (an OCI manifest
// that lost its last tag, a go module's go.mod beside its zip).
type ArtifactsApply struct {
	RepoID string     `json:"repo_id"`
	Drop   []string   `json:"drop,omitempty"`
	Put    []Artifact `json:"put,omitempty"`
	KV     []KVOp     `json:"kv,omitempty"`
	Quiet  []string   `json:"quiet,omitempty"`
	Actor  *Actor     `json:"actor,omitempty"`
	At     time.Time  `json:"at,omitempty"`
}

func (*ArtifactPut) Type() CmdType      { return CmdArtifactPut }
func (*ArtifactDelete) Type() CmdType   { return CmdArtifactDelete }
func (*ArtifactsApply) Type() CmdType   { return CmdArtifactsApply }
func (c *ArtifactPut) Scope() string    { return c.Artifact.RepositoryID }
func (c *ArtifactDelete) Scope() string { return c.RepoID }
func (c *ArtifactsApply) Scope() string { return c.RepoID }

func (c *ArtifactPut) apply(tx *Tx) error {
	if err := tx.putArtifact(c.Artifact, c.Replace, true); err != nil {
		return err
	}
	return tx.kvApply(c.Artifact.RepositoryID, c.KV)
}

// putArtifact stores a, replacing what is at its path only when replace,
// and records its upload when announce.
func (tx *Tx) putArtifact(a Artifact, replace, announce bool) error {
	r, err := tx.Repo(a.RepositoryID)
	if err != nil {
		return err
	}
	if a.ID == "" || a.Path == "" || a.Digest == "" {
		return Invalidf("artifact id, path and digest required")
	}
	if a.Properties != nil {
		if err := CheckProperties(a.Properties); err != nil {
			return err
		}
	}
	if tx.exists(KindArtifact, a.ID) {
		return Conflictf("artifact id %q exists", a.ID)
	}
	if old, _ := tx.lookup(SpaceArtifactPaths, key(r.ID, a.Path)); old != nil {
		if !replace {
			return Conflictf("%s already exists in repository %s", a.Path, r.Name)
		}
		was, err := tx.Artifact(string(old))
		if err != nil {
			return err
		}
		if err := tx.delArtifact(was); err != nil {
			return err
		}
	}
	a.Format = r.Format
	if err := tx.putRec(KindArtifact, a.ID, a); err != nil || !announce {
		return err
	}
	return tx.emitUploaded(&a, r)
}

func (c *ArtifactDelete) apply(tx *Tx) error {
	all := c.IDs
	if c.ID != "" {
		all = append([]string{c.ID}, c.IDs...)
	}
	repoID := c.RepoID
	seen := map[string]bool{}
	for _, id := range all {
		if seen[id] {
			continue
		}
		seen[id] = true
		a, err := tx.Artifact(id)
		if err != nil {
			return err
		}
		if repoID == "" {
			repoID = a.RepositoryID
		}
		if a.RepositoryID != repoID {
			return Invalidf("artifacts of several repositories in one delete")
		}
		r, err := tx.Repo(repoID)
		if err != nil {
			return err
		}
		if err := tx.delArtifact(a); err != nil {
			return err
		}
		if err := tx.emitDeleted(a, r, c.Actor, c.At); err != nil {
			return err
		}
	}
	if len(c.KV) == 0 {
		return nil
	}
	if c.RepoID == "" {
		return Invalidf("repo_id required with kv")
	}
	return (&KVApply{RepoID: c.RepoID, Ops: c.KV}).apply(tx)
}

func (c *ArtifactsApply) apply(tx *Tx) error {
	r, err := tx.Repo(c.RepoID)
	if err != nil {
		return err
	}
	for _, id := range c.Drop {
		a, err := tx.Artifact(id)
		if err != nil {
			return err
		}
		if a.RepositoryID != r.ID {
			return Invalidf("artifact %s is not in repository %s", id, r.Name)
		}
		if err := tx.delArtifact(a); err != nil {
			return err
		}
		if !slices.Contains(c.Quiet, id) {
			if err := tx.emitDeleted(a, r, c.Actor, c.At); err != nil {
				return err
			}
		}
	}
	paths := map[string]bool{}
	for _, a := range c.Put {
		switch {
		case a.RepositoryID != r.ID:
			return Invalidf("artifact %s is not in repository %s", a.ID, r.Name)
		case paths[a.Path]:
			return Invalidf("%s put twice", a.Path)
		}
		paths[a.Path] = true
		if err := tx.putArtifact(a, true, !slices.Contains(c.Quiet, a.ID)); err != nil {
			return err
		}
	}
	return tx.kvApply(r.ID, c.KV)
}

func artifactRepo(_ string, body []byte) string {
	var a struct {
		Repo string `json:"repository_id"`
	}
	_ = json.Unmarshal(body, &a)
	return a.Repo
}

// pkgEntry is the value of a package-versions index entry: enough to
// aggregate packages and versions without decoding artifacts.
func pkgEntry(a *Artifact) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(a.UploadedAt.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(a.SizeBytes))
	return b
}

func readPkgEntry(v []byte) (at int64, size int64) {
	if len(v) < 16 {
		return 0, 0
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
}

func indexArtifact(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Artifact](before, after)
	if err != nil {
		return err
	}
	if err := tx.indexChecksums(id, o, n); err != nil {
		return err
	}
	if err := tx.indexFileName(id, o, n); err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceArtifactPaths).Delete([]byte(key(o.RepositoryID, o.Path))); err != nil {
			return err
		}
		if err := tx.space(SpaceArtifactPkgs).Delete([]byte(key(o.RepositoryID, o.PackageName, o.Version, id))); err != nil {
			return err
		}
		if err := tx.unref(KindArtifact, id, append([]string{o.Digest}, o.Refs...)...); err != nil {
			return err
		}
		st := tx.repoStats(o.RepositoryID)
		st.Artifacts--
		st.Size -= o.SizeBytes
		if err := tx.setRepoStats(o.RepositoryID, st); err != nil {
			return err
		}
		if err := tx.summarise(o.RepositoryID, o.PackageName, o.Format); err != nil {
			return err
		}
		if n == nil {
			if err := tx.forgetDownloaded(id); err != nil {
				return err
			}
			if err := tx.forgetScans(id); err != nil {
				return err
			}
			if err := tx.forgetSignatures(id); err != nil {
				return err
			}
		}
	}
	if n != nil {
		if err := tx.setIndexEntry(SpaceArtifactPaths, key(n.RepositoryID, n.Path), []byte(id)); err != nil {
			return err
		}
		if err := tx.setIndexEntry(SpaceArtifactPkgs, key(n.RepositoryID, n.PackageName, n.Version, id), pkgEntry(n)); err != nil {
			return err
		}
		if err := tx.ref(KindArtifact, id, append([]string{n.Digest}, n.Refs...)...); err != nil {
			return err
		}
		st := tx.repoStats(n.RepositoryID)
		st.Artifacts++
		st.Size += n.SizeBytes
		if err := tx.setRepoStats(n.RepositoryID, st); err != nil {
			return err
		}
		return tx.summarise(n.RepositoryID, n.PackageName, n.Format)
	}
	return nil
}

// Artifact returns an artifact by id.
func (tx *Tx) Artifact(id string) (*Artifact, error) {
	return getRec[Artifact](tx, KindArtifact, id, "artifact")
}

// ArtifactByPath returns the artifact at path in a repository.
func (tx *Tx) ArtifactByPath(repoID, path string) (*Artifact, error) {
	id, _ := tx.lookup(SpaceArtifactPaths, key(repoID, path))
	if id == nil {
		return nil, NotFoundf("%s", path)
	}
	return tx.Artifact(string(id))
}

// VersionFiles are the artifacts of one version of a package in a
// repository.
func (tx *Tx) VersionFiles(repoID, name, version string) ([]Artifact, error) {
	var out []Artifact
	p := key(repoID, name, version+"\x00")
	err := tx.scan(SpaceArtifactPkgs, p, func(k string, _ []byte) error {
		a, err := tx.Artifact(k[len(p):])
		if err != nil {
			return err
		}
		out = append(out, *a)
		return nil
	})
	return out, err
}

// ArtifactsUnder lists the artifacts of a repository whose path starts
// with prefix, in path order.
func (tx *Tx) ArtifactsUnder(repoID, prefix string) ([]Artifact, error) {
	return tx.FirstArtifactsUnder(repoID, prefix, 0)
}

// FirstArtifactsUnder is ArtifactsUnder's first limit artifacts (0: all).
func (tx *Tx) FirstArtifactsUnder(repoID, prefix string, limit int) ([]Artifact, error) {
	var out []Artifact
	err := tx.scan(SpaceArtifactPaths, key(repoID, prefix), func(_ string, id []byte) error {
		if limit > 0 && len(out) >= limit {
			return errStop
		}
		a, err := tx.Artifact(string(id))
		if err != nil {
			return err
		}
		out = append(out, *a)
		return nil
	})
	return out, err
}
