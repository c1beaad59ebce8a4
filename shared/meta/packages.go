package meta

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Packages are aggregated from artifacts as they are written: each
// (repository, package) has a summary, so listings read one record per
// package shown instead of every artifact.

// PackageSummary is one package of a repository, aggregated over versions.
type PackageSummary struct {
	Name           string    `json:"name"`
	RepositoryID   string    `json:"repository_id"`
	Format         string    `json:"format"`
	LatestVersion  string    `json:"latest_version"`
	VersionCount   int       `json:"version_count"`
	TotalSizeBytes int64     `json:"total_size_bytes"`
	LastUpdated    time.Time `json:"last_updated"`
}

// VersionSummary is one version of a package. ArtifactID is its main file
// (the first that is not a companion, see Artifact.Companion).
type VersionSummary struct {
	Version      string    `json:"version"`
	ArtifactID   string    `json:"artifact_id"`
	RepositoryID string    `json:"repository_id"`
	SizeBytes    int64     `json:"size_bytes"`
	UploadedAt   time.Time `json:"uploaded_at"`
	FileCount    int       `json:"file_count"`
}

// summarise recomputes the summary of one package from its index entries
// (never from artifact records), keeping the repository's package count.
func (tx *Tx) summarise(repoID, name, format string) error {
	p := []byte(key(repoID, name, ""))
	s := PackageSummary{Name: name, RepositoryID: repoID, Format: format}
	versions := map[string]bool{}
	var latestAt int64
	cur := tx.space(SpaceArtifactPkgs).Cursor()
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		version, _, _ := strings.Cut(string(k[len(p):]), "\x00")
		at, size := readPkgEntry(v[8:])
		versions[version] = true
		s.TotalSizeBytes += size
		if at >= latestAt {
			latestAt, s.LatestVersion = at, version
			s.LastUpdated = time.Unix(0, at).UTC()
		}
	}
	s.VersionCount = len(versions)
	k := []byte(key(repoID, name))
	existed := tx.bucket(bPackages).Get(k) != nil
	st := tx.repoStats(repoID)
	if s.VersionCount == 0 {
		if !existed {
			return nil
		}
		st.Packages--
		if err := tx.setRepoStats(repoID, st); err != nil {
			return err
		}
		if err := tx.indexGrams(repoID, name, false); err != nil {
			return err
		}
		if err := tx.indexPkgName(repoID, name, false); err != nil {
			return err
		}
		return tx.bucket(bPackages).Delete(k)
	}
	if !existed {
		st.Packages++
		if err := tx.setRepoStats(repoID, st); err != nil {
			return err
		}
		if err := tx.indexGrams(repoID, name, true); err != nil {
			return err
		}
		if err := tx.indexPkgName(repoID, name, true); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.bucket(bPackages).Put(k, raw)
}

// PackageFilter narrows Packages.
type PackageFilter struct {
	RepoIDs []string // nil = all repositories
	Format  string
	Query   string // case-insensitive substring of the name
	Name    string // exact name
	Offset  int
	Limit   int // 0 = no limit
}

// Packages lists packages ordered by name then repository: the window
// [Offset, Offset+Limit) of them, and how many match in all. The listing
// merges the per-repository package indexes, so a page costs its own size
// plus one seek per repository; only a Query walks every name (and sorts
// its matches).
func (tx *Tx) Packages(f PackageFilter) ([]PackageSummary, int, error) {
	repos, err := tx.packageRepos(f)
	if err != nil {
		return nil, 0, err
	}
	out := []PackageSummary{}
	want := func(n int) bool { return n >= f.Offset && (f.Limit == 0 || n < f.Offset+f.Limit) }
	if f.Name != "" {
		total := 0
		for _, id := range repos {
			raw := tx.bucket(bPackages).Get([]byte(key(id, f.Name)))
			if raw == nil {
				continue
			}
			if want(total) {
				var s PackageSummary
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, 0, err
				}
				out = append(out, s)
			}
			total++
		}
		return out, total, nil
	}
	if q := lower(f.Query); len(q) >= gramLen {
		return tx.searchGrams(repos, q, want)
	} else if q != "" {
		return tx.searchPackages(repos, q, want)
	}
	m := newPkgMerge(tx.bucket(bPackages), repos)
	total := 0
	for m.Len() > 0 {
		c := m.top()
		if want(total) {
			var s PackageSummary
			if err := json.Unmarshal(c.val, &s); err != nil {
				return nil, 0, err
			}
			out = append(out, s)
		}
		total++
		if f.Limit > 0 && total >= f.Offset+f.Limit {
			// The rest only counts: the repositories' totals say it.
			total = 0
			for _, id := range repos {
				total += int(tx.repoStats(id).Packages)
			}
			return out, total, nil
		}
		m.advance()
	}
	return out, total, nil
}

// searchPackages lists the packages whose name contains q (lower case,
// shorter than a trigram): every name is read, but a repository's names
// in one pass of its own, and only the matches are sorted and decoded.
func (tx *Tx) searchPackages(repos []string, q string, want func(int) bool) ([]PackageSummary, int, error) {
	type hit struct{ name, repo string }
	var hits []hit
	b := tx.bucket(bPackages)
	for _, id := range repos {
		p := []byte(key(id, ""))
		cur := b.Cursor()
		for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
			if name := string(k[len(p):]); strings.Contains(lower(name), q) {
				hits = append(hits, hit{name, id})
			}
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].name != hits[j].name {
			return hits[i].name < hits[j].name
		}
		return hits[i].repo < hits[j].repo
	})
	out := []PackageSummary{}
	for i, h := range hits {
		if !want(i) {
			continue
		}
		s, err := tx.packageSummary(h.repo, h.name)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	return out, len(hits), nil
}

// packageSummary reads one package's summary.
func (tx *Tx) packageSummary(repoID, name string) (PackageSummary, error) {
	var s PackageSummary
	err := json.Unmarshal(tx.bucket(bPackages).Get([]byte(key(repoID, name))), &s)
	return s, err
}

// packageRepos are the repository ids a filter covers, sorted.
func (tx *Tx) packageRepos(f PackageFilter) ([]string, error) {
	ids := f.RepoIDs
	if ids == nil {
		cur := tx.space(Space(KindRepo)).Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			ids = append(ids, string(k))
		}
	}
	if f.Format == "" {
		return ids, nil
	}
	var out []string
	for _, id := range ids {
		r, err := tx.Repo(id)
		if err != nil {
			continue // gone: nothing to list
		}
		if r.Format == f.Format {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// pkgMerge walks several repositories' package indexes in (name,
// repository) order.
type pkgMerge []*pkgCursor

type pkgCursor struct {
	cur    *bolt.Cursor
	prefix []byte
	repo   string
	name   string
	val    []byte
}

func newPkgMerge(b *bolt.Bucket, repos []string) *pkgMerge {
	m := &pkgMerge{}
	for _, id := range repos {
		c := &pkgCursor{cur: b.Cursor(), prefix: []byte(key(id, "")), repo: id}
		if c.load(c.cur.Seek(c.prefix)) {
			*m = append(*m, c)
		}
	}
	heap.Init(m)
	return m
}

func (c *pkgCursor) load(k, v []byte) bool {
	if k == nil || !bytes.HasPrefix(k, c.prefix) {
		return false
	}
	c.name, c.val = string(k[len(c.prefix):]), v
	return true
}

func (m *pkgMerge) top() *pkgCursor { return (*m)[0] }

func (m *pkgMerge) advance() {
	c := (*m)[0]
	if c.load(c.cur.Next()) {
		heap.Fix(m, 0)
	} else {
		heap.Pop(m)
	}
}

func (m pkgMerge) Len() int { return len(m) }
func (m pkgMerge) Less(i, j int) bool {
	if m[i].name != m[j].name {
		return m[i].name < m[j].name
	}
	return m[i].repo < m[j].repo
}
func (m pkgMerge) Swap(i, j int) { m[i], m[j] = m[j], m[i] }
func (m *pkgMerge) Push(x any)   { *m = append(*m, x.(*pkgCursor)) }
func (m *pkgMerge) Pop() any {
	old := *m
	x := old[len(old)-1]
	*m = old[:len(old)-1]
	return x
}

// better reports whether artifact id names its version better than
// artifact cur: a companion never does while another file is there, and
// of companions alone (a Maven POM project: its POM and signatures) the
// shorter path does.
func better(tx *Tx, id, cur string) bool {
	c, err := tx.Artifact(cur)
	if err != nil || !c.Companion {
		return false
	}
	a, err := tx.Artifact(id)
	return err == nil && (!a.Companion || len(a.Path) < len(c.Path))
}

// add counts one file of the version (id, uploaded at at, in unix
// nanoseconds, of size bytes): its main file is the best of them, its
// upload time the latest.
func (vs *VersionSummary) add(tx *Tx, id string, at, size int64) {
	t := time.Unix(0, at).UTC()
	if vs.FileCount == 0 || better(tx, id, vs.ArtifactID) {
		vs.ArtifactID = id
	}
	if vs.FileCount == 0 || t.After(vs.UploadedAt) {
		vs.UploadedAt = t
	}
	vs.SizeBytes += size
	vs.FileCount++
}

// Versions lists the versions of a package in one repository, newest
// upload first.
func (tx *Tx) Versions(repoID, name string) ([]VersionSummary, error) {
	byVersion := map[string]*VersionSummary{}
	var order []string
	p := key(repoID, name, "")
	err := tx.scan(SpaceArtifactPkgs, p, func(k string, v []byte) error {
		version, artID, _ := strings.Cut(k[len(p):], "\x00")
		at, size := readPkgEntry(v)
		vs := byVersion[version]
		if vs == nil {
			vs = &VersionSummary{Version: version, RepositoryID: repoID}
			byVersion[version] = vs
			order = append(order, version)
		}
		vs.add(tx, artID, at, size)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]VersionSummary, 0, len(order))
	for _, k := range order {
		out = append(out, *byVersion[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UploadedAt.After(out[j].UploadedAt) })
	return out, nil
}

// PackageNames visits the names of a repository's packages (those with at
// least one artifact) in name order, reading no summary, until fn returns
// false. Derived from the package versions, it is not tracked: for reads,
// not for decisions.
func (tx *Tx) PackageNames(repoID string, fn func(name string) bool) {
	tx.PackageNamesAfter(repoID, "", fn)
}

// PackageNamesAfter is PackageNames from the first name after after (""
// from the first): a long walk in short views.
func (tx *Tx) PackageNamesAfter(repoID, after string, fn func(name string) bool) {
	p := []byte(key(repoID, ""))
	cur := tx.bucket(bPackages).Cursor()
	k, _ := cur.Seek([]byte(key(repoID, after)))
	if after != "" && k != nil && string(k[len(p):]) == after {
		k, _ = cur.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		if !fn(string(k[len(p):])) {
			return
		}
	}
}

// PackageRepos lists, in repository name order, the ids of the
// repositories that have a package of that name: one lookup per
// repository, no record read. Untracked: for reads, not for decisions.
func (tx *Tx) PackageRepos(name string) []string {
	var out []string
	pkgs := tx.bucket(bPackages)
	cur := tx.space(SpaceRepoNames).Cursor()
	for _, v := cur.First(); v != nil; _, v = cur.Next() {
		id := string(v[8:])
		if pkgs.Get([]byte(key(id, name))) != nil {
			out = append(out, id)
		}
	}
	return out
}
