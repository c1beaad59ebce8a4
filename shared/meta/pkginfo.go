package meta

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Package information: what a package says of itself (its summary,
// description, licences, keywords, links), read from one of its files by
// the format's inspector, one record per package of a repository. The
// record feeds search: its terms (keywords, licences, the words of its
// summary and description) are indexed, so a package is found by what it
// is about, not only by its name. The origin's indexer writes them; edges
// receive them with their repositories' other records.

const (
	KindPackageInfo   Kind    = 14
	CmdPackageInfoPut CmdType = 41
	CmdReindexStart   CmdType = 42
)

var bTerms = []byte("pkg_terms") // term \0 repo \0 name -> ""

func init() {
	declareKind(KindPackageInfo, kindDecl{Name: "package information", Bucket: "pkg_info", Repo: kvRepo,
		Index: indexPackageInfo, Derived: [][]byte{bTerms}})
	declareCommand(CmdPackageInfoPut, func() Command { return new(PackageInfoPut) })
	declareCommand(CmdReindexStart, func() Command { return new(ReindexStart) })
}

// Bounds of a PackageInfo record, in bytes: what search and a package's
// page need, far less than a format's inspector may read.
const (
	MaxInfoSummary     = 1 << 10
	MaxInfoDescription = 4 << 10
	MaxInfoShort       = 256 // a licence, a keyword, a version
	MaxInfoURL         = 2 << 10
	MaxInfoList        = 32 // licences; keywords
	// MaxTerms bounds the terms a package is indexed by.
	MaxTerms = 64
)

// PackageInfo is what a package says of itself, as read from one of its
// files (ArtifactID, of Version, uploaded at UploadedAt).
type PackageInfo struct {
	RepositoryID string    `json:"repository_id"`
	Name         string    `json:"name"`
	ArtifactID   string    `json:"artifact_id"`
	Version      string    `json:"version"`
	UploadedAt   time.Time `json:"uploaded_at"`
	Summary      string    `json:"summary,omitempty"`
	Description  string    `json:"description,omitempty"`
	Licenses     []string  `json:"licenses,omitempty"`
	Keywords     []string  `json:"keywords,omitempty"`
	Homepage     string    `json:"homepage,omitempty"`
	Source       string    `json:"source,omitempty"` // source repository URL
}

// Empty reports whether p says nothing search can use.
func (p *PackageInfo) Empty() bool {
	return p.Summary == "" && p.Description == "" && len(p.Licenses) == 0 && len(p.Keywords) == 0
}

// bounded is p cut to the record's bounds (at rune boundaries).
func (p PackageInfo) bounded() PackageInfo {
	p.Version = clip(p.Version, MaxInfoShort)
	p.Summary = clip(p.Summary, MaxInfoSummary)
	p.Description = clip(p.Description, MaxInfoDescription)
	p.Homepage = clip(p.Homepage, MaxInfoURL)
	p.Source = clip(p.Source, MaxInfoURL)
	list := func(l []string) []string {
		var out []string
		for _, s := range l[:min(len(l), MaxInfoList)] {
			if s = strings.TrimSpace(clip(s, MaxInfoShort)); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	p.Licenses, p.Keywords = list(p.Licenses), list(p.Keywords)
	return p
}

// clip cuts s to at most n bytes of valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// stopWords are words too common in descriptions to find anything by.
var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true,
	"from": true, "are": true, "you": true, "your": true, "not": true, "can": true, "use": true, "all": true,
	"its": true, "into": true, "will": true, "has": true, "have": true, "was": true, "but": true, "any": true}

// Terms are what a package is found by besides its name: its keywords
// and licences whole (lower case), then the words (letters and digits,
// 3 to 40 bytes, common English words left out) of its summary and
// description, at most MaxTerms in all, first come first kept.
func (p *PackageInfo) Terms() []string {
	var out []string
	seen := map[string]bool{}
	add := func(t string) {
		if t != "" && len(t) <= MaxInfoShort && !seen[t] && len(out) < MaxTerms {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, l := range [][]string{p.Keywords, p.Licenses} {
		for _, s := range l {
			add(lower(strings.TrimSpace(s)))
		}
	}
	for _, text := range []string{p.Summary, p.Description} {
		for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if w = lower(w); len(w) >= 3 && len(w) <= 40 && !stopWords[w] {
				add(w)
			}
		}
	}
	return out
}

func indexPackageInfo(tx *Tx, k string, before, after []byte) error {
	o, n, err := decodePair[PackageInfo](before, after)
	if err != nil {
		return err
	}
	repo, name, _ := strings.Cut(k, "\x00")
	var was, is []string
	if o != nil {
		was = o.Terms()
	}
	if n != nil {
		is = n.Terms()
	}
	for _, t := range was {
		if !slices.Contains(is, t) {
			if err := tx.delKey(bTerms, key(t, repo, name)); err != nil {
				return err
			}
		}
	}
	for _, t := range is {
		if !slices.Contains(was, t) {
			if err := tx.setKey(bTerms, key(t, repo, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// PackageInfoOf reads what a package of a repository says of itself
// (nil: nothing known yet).
func (tx *Tx) PackageInfoOf(repoID, name string) *PackageInfo {
	raw, _ := tx.lookup(Space(KindPackageInfo), key(repoID, name))
	var p PackageInfo
	if raw == nil || json.Unmarshal(raw, &p) != nil {
		return nil
	}
	return &p
}

// PackagesByTerm visits, in (term, repository, name) order, the packages
// with a term that starts with prefix (lower case), or is it when exact;
// fn returning false stops.
func (tx *Tx) PackagesByTerm(prefix string, exact bool, fn func(term, repoID, name string) bool) {
	p := []byte(prefix)
	if exact {
		p = append(p, 0)
	}
	cur := tx.bucket(bTerms).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		parts := strings.SplitN(string(k), "\x00", 3)
		if len(parts) == 3 && !fn(parts[0], parts[1], parts[2]) {
			return
		}
	}
}

// dropInfoOf deletes the information of a package that has no version
// left (called after its artifacts are deleted).
func (tx *Tx) dropInfoOf(repoID, name string) error {
	k := key(repoID, name)
	if tx.bucket(bPackages).Get([]byte(k)) != nil || tx.space(Space(KindPackageInfo)).Get([]byte(k)) == nil {
		return nil
	}
	return tx.delRec(KindPackageInfo, k)
}

// delArtifact deletes an artifact and, with its package's last version,
// what the package said of itself.
func (tx *Tx) delArtifact(a *Artifact) error {
	if err := tx.delRec(KindArtifact, a.ID); err != nil {
		return err
	}
	return tx.dropInfoOf(a.RepositoryID, a.PackageName)
}

// The indexer's state: how far it has read the change feed, and the
// reindex in progress or last finished.
const stateIndexer = "search_indexer"

// IndexerState is the origin indexer's replicated state.
type IndexerState struct {
	// Cursor is the change-feed index up to which artifacts have been
	// inspected.
	Cursor  uint64   `json:"cursor"`
	Reindex *Reindex `json:"reindex,omitempty"`
}

// Reindex is a rebuild of the package information of every artifact.
type Reindex struct {
	Status      string     `json:"status"` // running, completed
	RequestedBy string     `json:"requested_by,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Total       int        `json:"total"`  // artifacts when it started
	Done        int        `json:"done"`   // artifacts read so far
	Failed      int        `json:"failed"` // of them, not inspected (errors are logged)
}

// Indexer reads the indexer's state.
func (tx *Tx) Indexer() IndexerState {
	var s IndexerState
	if raw, _ := tx.lookup(Space(KindState), stateIndexer); raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// PackageInfoPut records what the indexer read from the artifacts
// changed in the feed after From up to To, and moves its cursor there: it
// is refused (a conflict) when the cursor is no longer at From. Each
// information replaces its package's when it was read from the same
// artifact, or says something and comes from a file uploaded no earlier
// than the one the package's came from (or that file is gone); the
// information of an artifact deleted meanwhile is dropped.
type PackageInfoPut struct {
	Infos []PackageInfo `json:"infos,omitempty"`
	From  uint64        `json:"from"`
	To    uint64        `json:"to"`
	// Read and Failed count the artifacts read and not inspected, for a
	// reindex's progress; Finished: the feed was read to its end.
	Read     int        `json:"read,omitempty"`
	Failed   int        `json:"failed,omitempty"`
	Finished bool       `json:"finished,omitempty"`
	At       *time.Time `json:"at,omitempty"`
}

func (*PackageInfoPut) Type() CmdType { return CmdPackageInfoPut }
func (*PackageInfoPut) Scope() string { return "" }

func (c *PackageInfoPut) apply(tx *Tx) error {
	st := tx.Indexer()
	if st.Cursor != c.From {
		return Conflictf("the indexer's cursor is at %d, not %d", st.Cursor, c.From)
	}
	for _, in := range c.Infos {
		in = in.bounded()
		a, err := tx.Artifact(in.ArtifactID)
		if err != nil || a.RepositoryID != in.RepositoryID || a.PackageName != in.Name {
			continue // deleted meanwhile
		}
		in.Version, in.UploadedAt = a.Version, a.UploadedAt
		if old := tx.PackageInfoOf(in.RepositoryID, in.Name); old != nil && old.ArtifactID != in.ArtifactID {
			if in.Empty() {
				continue
			}
			if !old.Empty() && tx.exists(KindArtifact, old.ArtifactID) && in.UploadedAt.Before(old.UploadedAt) {
				continue
			}
		} else if old == nil && in.Empty() {
			continue
		}
		if err := tx.putRec(KindPackageInfo, key(in.RepositoryID, in.Name), in); err != nil {
			return err
		}
	}
	st.Cursor = c.To
	if r := st.Reindex; r != nil && r.Status == "running" {
		r.Done += c.Read
		r.Failed += c.Failed
		if c.Finished {
			r.Status, r.FinishedAt = "completed", c.At
		}
	}
	return tx.putRec(KindState, stateIndexer, st)
}

// ReindexStart begins a reindex: the indexer reads every artifact again
// from the start of the feed. Refused (a conflict) while one runs.
type ReindexStart struct {
	By    string    `json:"by,omitempty"`
	At    time.Time `json:"at"`
	Total int       `json:"total"`
}

func (*ReindexStart) Type() CmdType { return CmdReindexStart }
func (*ReindexStart) Scope() string { return "" }

func (c *ReindexStart) apply(tx *Tx) error {
	st := tx.Indexer()
	if st.Reindex != nil && st.Reindex.Status == "running" {
		return Conflictf("a reindex is running (started at %s, %d of %d artifacts read)",
			st.Reindex.StartedAt.Format(time.RFC3339), st.Reindex.Done, st.Reindex.Total)
	}
	st.Cursor = 0
	st.Reindex = &Reindex{Status: "running", RequestedBy: c.By, StartedAt: c.At, Total: c.Total}
	return tx.putRec(KindState, stateIndexer, st)
}
