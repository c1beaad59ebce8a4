package npm

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Keys of the repository's format keyspace. Each tag and each deprecation
// has its own key, so writes to different versions or tags of a package
// never overwrite one another; package names hold at most one slash and
// tags and versions none, so the prefixes cannot collide.
const (
	keyPkg = "pkg/" // pkg/<name> -> pkgMeta
	keyTag = "tag/" // tag/<name>/<tag> -> "<version>"
	keyDep = "dep/" // dep/<name>/<version> -> "<deprecation message>"
	// find/<name> -> "<text>": what search matches besides the name (see
	// findText), apart from the package record, whose readme may be large.
	keyFind = "find/"
)

func pkgKey(n Name) string                 { return keyPkg + n.String() }
func tagPrefix(n Name) string              { return keyTag + n.String() + "/" }
func tagKey(n Name, tag string) string     { return tagPrefix(n) + tag }
func depPrefix(n Name) string              { return keyDep + n.String() + "/" }
func depKey(n Name, version string) string { return depPrefix(n) + version }
func findKey(n Name) string                { return keyFind + n.String() }

// pkgMeta is the package-level part of a packument.
type pkgMeta struct {
	Description string    `json:"description,omitempty"`
	Readme      string    `json:"readme,omitempty"`
	Keywords    []string  `json:"keywords,omitempty"`
	Created     time.Time `json:"created"`
	Modified    time.Time `json:"modified"`
}

// findText is what search matches in a package besides its name: its
// description and keywords, lower case, as one string.
func findText(m pkgMeta) string {
	return strings.ToLower(m.Description + " " + strings.Join(m.Keywords, " "))
}

// findOp keeps the search record of a package in step with m: its
// findText as a JSON string.
func findOp(n Name, m pkgMeta) meta.KVOp {
	return format.KVSet(findKey(n), findText(m))
}

// readFindText reads a search record. A JSON string without a backslash
// is its bytes between the quotes, so the common case decodes nothing.
func readFindText(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// version is one published version.
type version struct {
	Raw string
	SV  Version
	A   meta.Artifact
}

// pkgState is everything stored about one package, read in one view.
type pkgState struct {
	Name       Name
	Meta       pkgMeta
	Versions   []version // ascending semver
	Tags       map[string]string
	Deprecated map[string]string
}

// load reads a package's versions and keyspace entries consistently, for
// answering reads: the state is remembered while the repository's
// artifacts and keys stay the same (a package of more than
// maxRememberedVersions versions is read each time), and must not be
// changed. Writes decide from loadTx in their own view.
func (f *Format) load(repo *meta.Repository, n Name) (*pkgState, error) {
	return f.memos().packages.Get(pkgMemoKey{repo.ID, n.String()}, repo.ID, func(tx *meta.Tx) (*pkgState, bool, error) {
		st, err := loadTx(tx, repo, n)
		return st, err == nil && len(st.Versions) <= maxRememberedVersions, err
	})
}

// loadTx reads a package's versions and keyspace entries from tx.
func loadTx(tx *meta.Tx, repo *meta.Repository, n Name) (*pkgState, error) {
	st := &pkgState{Name: n, Tags: map[string]string{}, Deprecated: map[string]string{}}
	err := func() error {
		arts, err := tx.ArtifactsUnder(repo.ID, n.String()+"/-/")
		if err != nil {
			return err
		}
		for _, a := range arts {
			if a.PackageName != n.String() {
				continue
			}
			sv, ok := ParseVersion(a.Version)
			if !ok {
				continue
			}
			st.Versions = append(st.Versions, version{Raw: a.Version, SV: sv, A: a})
		}
		if raw, ok := tx.KV(repo.ID, pkgKey(n)); ok {
			if err := json.Unmarshal(raw, &st.Meta); err != nil {
				return err
			}
		}
		for _, kv := range tx.KVList(repo.ID, tagPrefix(n)) {
			var v string
			if json.Unmarshal(kv.Value, &v) == nil {
				st.Tags[strings.TrimPrefix(kv.Key, tagPrefix(n))] = v
			}
		}
		for _, kv := range tx.KVList(repo.ID, depPrefix(n)) {
			var msg string
			if json.Unmarshal(kv.Value, &msg) == nil {
				st.Deprecated[strings.TrimPrefix(kv.Key, depPrefix(n))] = msg
			}
		}
		return nil
	}()
	sort.Slice(st.Versions, func(i, j int) bool { return Compare(st.Versions[i].SV, st.Versions[j].SV) < 0 })
	return st, err
}

// find returns the stored version v.
func (st *pkgState) find(v string) (*version, bool) {
	for i := range st.Versions {
		if st.Versions[i].Raw == v {
			return &st.Versions[i], true
		}
	}
	return nil, false
}

// distTags are the tags that point at stored versions, with "latest"
// always present (yarn and pnpm fail without it).
func (st *pkgState) distTags() map[string]string {
	out := map[string]string{}
	for t, v := range st.Tags {
		if _, ok := st.find(v); ok {
			out[t] = v
		}
	}
	if _, ok := out["latest"]; !ok && len(st.Versions) > 0 {
		out["latest"] = highest(st.Versions, nil)
	}
	return out
}

// highest is the highest version not in skip, preferring releases over
// prereleases (npm's choice for "latest"); "" when none is left.
func highest(vs []version, skip map[string]bool) string {
	best := ""
	for i := len(vs) - 1; i >= 0; i-- {
		if skip[vs[i].Raw] {
			continue
		}
		if len(vs[i].SV.Pre) == 0 {
			return vs[i].Raw
		}
		if best == "" {
			best = vs[i].Raw
		}
	}
	return best
}

// rev is the CouchDB-style revision npm echoes back on unpublish. It is
// informational: writes are checked against the stored state instead.
func (st *pkgState) rev() string {
	return fmt.Sprintf("%d-%016x", len(st.Versions), st.Meta.Modified.UnixNano())
}

// dropOps are the keyspace changes when versions in gone are removed:
// their tags and deprecations go, and "latest" moves to prefer (when it
// remains) or to the highest remaining version.
func (st *pkgState) dropOps(gone map[string]bool, prefer string, now time.Time) []meta.KVOp {
	var ops []meta.KVOp
	for _, t := range sortedKeys(st.Tags) {
		if gone[st.Tags[t]] {
			ops = append(ops, format.KVDelete(tagKey(st.Name, t)))
		}
	}
	for _, v := range sortedKeys(st.Deprecated) {
		if gone[v] {
			ops = append(ops, format.KVDelete(depKey(st.Name, v)))
		}
	}
	if latest := st.distTags()["latest"]; gone[latest] {
		next := highest(st.Versions, gone)
		if _, ok := st.find(prefer); ok && !gone[prefer] {
			next = prefer
		}
		ops = append(ops, format.KVSet(tagKey(st.Name, "latest"), next))
	}
	m := st.Meta
	m.Modified = now
	return append(ops, format.KVSet(pkgKey(st.Name), m))
}

// purgeOps delete every keyspace entry of the package.
func (st *pkgState) purgeOps() []meta.KVOp {
	ops := []meta.KVOp{format.KVDelete(pkgKey(st.Name)), format.KVDelete(findKey(st.Name))}
	for _, t := range sortedKeys(st.Tags) {
		ops = append(ops, format.KVDelete(tagKey(st.Name, t)))
	}
	for _, v := range sortedKeys(st.Deprecated) {
		ops = append(ops, format.KVDelete(depKey(st.Name, v)))
	}
	return ops
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// integrity is the SRI string of the stored tarball (the blob store's
// own sha512, not what the client claimed).
func integrity(a *meta.Artifact) string {
	raw, err := hex.DecodeString(a.Checksums.SHA512)
	if err != nil || len(raw) == 0 {
		return ""
	}
	return "sha512-" + base64.StdEncoding.EncodeToString(raw)
}

// Pinned names the versions a dist-tag points at (latest among them):
// retention rules keep them (format.Pinner).
func (f *Format) Pinned(tx *meta.Tx, repo *meta.Repository, pkg string) (map[string]bool, error) {
	n, err := ParseName(pkg)
	if err != nil {
		return nil, nil // not a package this format stored: nothing points at it
	}
	st, err := loadTx(tx, repo, n)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, v := range st.distTags() {
		out[v] = true
	}
	return out, nil
}
