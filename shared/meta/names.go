package meta

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
)

// Names for search. Package names are indexed by their lower-case form
// (exact and prefix matches) besides their trigrams (substrings, search.go),
// and artifact files by their lower-case file name, the last element of
// their path (exact and prefix matches).

var (
	bPkgNames  = []byte("pkg_names")  // lower(name) \0 repo \0 name -> ""
	bFileNames = []byte("file_names") // lower(file name) \0 repo \0 artifact id -> ""
)

// fileName is the name an artifact's file is found by.
func fileName(p string) string { return lower(path.Base(p)) }

// indexPkgName adds or removes a package of a repository.
func (tx *Tx) indexPkgName(repoID, name string, add bool) error {
	k := key(lower(name), repoID, name)
	if add {
		return tx.setKey(bPkgNames, k)
	}
	return tx.delKey(bPkgNames, k)
}

// indexFileName moves an artifact's entry from its old path (o, nil: none)
// to its new one.
func (tx *Tx) indexFileName(id string, o, n *Artifact) error {
	if o != nil {
		if err := tx.delKey(bFileNames, key(fileName(o.Path), o.RepositoryID, id)); err != nil {
			return err
		}
	}
	if n != nil {
		return tx.setKey(bFileNames, key(fileName(n.Path), n.RepositoryID, id))
	}
	return nil
}

// buildPkgNames fills the package-name index from the package summaries.
func buildPkgNames(tx *Tx) error {
	var keys [][]byte
	cur := tx.bucket(bPackages).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		repo, name, _ := strings.Cut(string(k), "\x00")
		keys = append(keys, []byte(key(lower(name), repo, name)))
	}
	return putInOrder(tx.bucket(bPkgNames), keys)
}

// buildFileNames fills the file-name index from the artifacts' paths (the
// lookup space holds them without decoding an artifact).
func buildFileNames(tx *Tx) error {
	var keys [][]byte
	cur := tx.space(SpaceArtifactPaths).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		repo, p, _ := strings.Cut(string(k), "\x00")
		keys = append(keys, []byte(key(fileName(p), repo, string(v[8:]))))
	}
	return putInOrder(tx.bucket(bFileNames), keys)
}

// PackagesByName visits, in (lower-case name, repository) order, the
// packages whose lower-case name starts with prefix (lower case), or is
// it when exact; fn returning false stops.
func (tx *Tx) PackagesByName(prefix string, exact bool, fn func(repoID, name string) bool) {
	p := []byte(prefix)
	if exact {
		p = append(p, 0)
	}
	cur := tx.bucket(bPkgNames).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		_, rest, _ := bytes.Cut(k, []byte{0})
		repo, name, _ := strings.Cut(string(rest), "\x00")
		if !fn(repo, name) {
			return
		}
	}
}

// FilesByName visits, in (file name, repository, id) order, the
// artifacts whose lower-case file name starts with prefix (lower case), or
// is it when exact; fn returning false stops.
func (tx *Tx) FilesByName(prefix string, exact bool, fn func(repoID, id, fileName string) bool) {
	p := []byte(prefix)
	if exact {
		p = append(p, 0)
	}
	cur := tx.bucket(bFileNames).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		parts := strings.SplitN(string(k), "\x00", 3)
		if len(parts) == 3 && !fn(parts[1], parts[2], parts[0]) {
			return
		}
	}
}

// Package reads one package's summary; ok is false when the repository
// has no such package.
func (tx *Tx) Package(repoID, name string) (s PackageSummary, ok bool) {
	raw := tx.bucket(bPackages).Get([]byte(key(repoID, name)))
	if raw == nil {
		return s, false
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// Version summarises one version of a package of a repository (reading
// that version's files alone); ok is false when there is no such version.
func (tx *Tx) Version(repoID, name, version string) (vs VersionSummary, ok bool) {
	p := []byte(key(repoID, name, version, ""))
	cur := tx.space(SpaceArtifactPkgs).Cursor()
	for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
		id := string(k[len(p):])
		at, size := readPkgEntry(v[8:])
		if !ok {
			vs, ok = VersionSummary{Version: version, RepositoryID: repoID}, true
		}
		vs.add(tx, id, at, size)
	}
	return vs, ok
}
