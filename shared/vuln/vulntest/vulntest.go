// Package vulntest gives tests the real advisory data the scanner is
// tested with: OSV records of eight ecosystems (10,471 advisories; their
// licences and notices are in the archive's LICENSES.md) and the test
// cases that say which findings each of 80 package versions must have.
package vulntest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	_ "embed"
	"encoding/json"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/depot-registry/depot/shared/vuln"
)

//go:embed testdata/vulndb.tar.zst
var archive []byte

// Case is one test case: a package version and the advisories that must
// affect it, and a version that none affects.
type Case struct {
	Ecosystem          string         `json:"ecosystem"`
	Name               string         `json:"name"`
	Affected           string         `json:"affected_version"`
	Primary            string         `json:"primary_advisory"`
	PrimarySeverity    string         `json:"primary_severity"`
	Expected           []Finding      `json:"expected_findings"`
	NotAffected        string         `json:"not_affected_version"`
	ExpectedBySeverity map[string]int `json:"expected_counts"`
}

// Finding is an expected finding: an advisory id and its severity label
// (CRITICAL, HIGH, MEDIUM, LOW, UNKNOWN).
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
}

var (
	once  sync.Once
	files map[string][]byte // path in the archive -> bytes
	err   error
)

func unpack() {
	once.Do(func() {
		files = map[string][]byte{}
		var zr *zstd.Decoder
		if zr, err = zstd.NewReader(bytes.NewReader(archive)); err != nil {
			return
		}
		defer zr.Close()
		tr := tar.NewReader(zr)
		for {
			h, e := tr.Next()
			if e == io.EOF {
				return
			}
			if e != nil {
				err = e
				return
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			b, e := io.ReadAll(tr)
			if e != nil {
				err = e
				return
			}
			files[h.Name] = b
		}
	})
}

func all(t testing.TB) map[string][]byte {
	t.Helper()
	unpack()
	if err != nil {
		t.Fatalf("the advisory test data: %v", err)
	}
	return files
}

// Records are the OSV JSON files, by path ("vulndb/npm/GHSA-....json").
func Records(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range all(t) {
		if path.Ext(name) == ".json" && strings.Count(name, "/") == 2 {
			out[name] = b
		}
	}
	return out
}

// Advisories are the records parsed.
func Advisories(t testing.TB) []vuln.Advisory {
	t.Helper()
	var out []vuln.Advisory
	recs := Records(t)
	for _, name := range slices.Sorted(maps.Keys(recs)) { // in path order: the same every time
		b := recs[name]
		a, err := vuln.Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, a)
	}
	return out
}

// Cases are the test cases.
func Cases(t testing.TB) []Case {
	t.Helper()
	var out []Case
	if err := json.Unmarshal(all(t)["vulndb/testcases.json"], &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Zip is the records as an operator uploads them: a zip of OSV JSON
// files (with the licences beside them), only those of the ecosystems
// named (none: all).
func Zip(t testing.TB, ecosystems ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range all(t) {
		dir := strings.Split(name, "/")
		if path.Ext(name) == ".json" && len(dir) == 3 && len(ecosystems) > 0 && !slices.Contains(ecosystems, dir[1]) {
			continue
		}
		if name == "vulndb/testcases.json" {
			continue
		}
		w, err := zw.Create(name)
		if err == nil {
			_, err = w.Write(b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
