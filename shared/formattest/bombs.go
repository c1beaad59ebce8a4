package formattest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Bomb is an upload made to cost a server more than its size: the
// request that sends it, and what the server must answer.
type Bomb struct {
	Name   string
	Repo   [2]string // repository name and format
	Method string
	Path   string
	Body   []byte
	Header map[string]string
	// File is the archive as a repository would store it (the body, but
	// for a crate's publish the .crate in it), and StoredPath its
	// artifact path: inspectors must refuse it as uploads do.
	File       []byte
	StoredPath string
}

// condaBomb is a 1 KiB .tar.bz2 whose first member is 1 GiB of zeros,
// then info/index.json (made with tar and bzip2 -9).
//
//go:embed testdata/conda-bomb.tar.bz2
var condaBomb []byte

// Bombs are the archives of the review that found uploads unpacking
// without bound: a gem whose metadata.gz unpacks to 4 MiB of YAML (a
// list of a million elements), a chart with many copies of Chart.yaml and
// one with a 1 MiB Chart.yaml, the conda package above, a .crate, a
// module zip and a composer zip whose members unpack 256 MiB of zeros.
func Bombs(t Fataler) []Bomb {
	t.Helper()
	var meta bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&meta, gzip.BestCompression)
	fmt.Fprintf(zw, "--- !ruby/object:Gem::Specification\nname: bomb\nversion: !ruby/object:Gem::Version\n  version: 1.0.0\nauthors:\n")
	_, _ = io.Copy(zw, strings.NewReader(strings.Repeat("- a\n", 1<<20-64)))
	_ = zw.Close()
	gem := Tar(t, map[string]string{"metadata.gz": meta.String(), "data.tar.gz": ""})

	chart := "apiVersion: v2\nname: bomb\nversion: 1.0.0\ndescription: " + strings.Repeat("x", 1000) + "\n"
	var repeated []tarFile
	for range 64 {
		repeated = append(repeated, tarFile{"bomb/Chart.yaml", []byte(chart)})
	}
	huge := "apiVersion: v2\nname: bomb\nversion: 1.0.0\ndescription: " + strings.Repeat("y", 1<<20) + "\n"

	zeros := func(name string) tarFile { return tarFile{name, nil} } // 256 MiB of zeros, streamed
	crate := tgzFiles(t, zeros("bomb-1.0.0/zeros"), tarFile{"bomb-1.0.0/Cargo.toml", []byte("[package]\nname = \"bomb\"\n")})
	var cratePub bytes.Buffer
	metaJSON := `{"name":"bomb","vers":"1.0.0","deps":[]}`
	_ = binary.Write(&cratePub, binary.LittleEndian, uint32(len(metaJSON)))
	cratePub.WriteString(metaJSON)
	_ = binary.Write(&cratePub, binary.LittleEndian, uint32(len(crate)))
	cratePub.Write(crate)

	chartBody, hugeChart, modZip, composerZip := tgzFiles(t, repeated...), tgzFiles(t, tarFile{"bomb/Chart.yaml", []byte(huge)}),
		zipZeros(t, "example.com/bomb@v1.0.0/go.mod"), zipZeros(t, "composer.json")
	return []Bomb{
		{Name: "gem with 4 MiB of YAML", Repo: [2]string{"gems", "rubygems"}, Method: "POST", Path: "/rubygems/gems/api/v1/gems", Body: gem,
			File: gem, StoredPath: "gems/bomb-1.0.0.gem"},
		{Name: "chart with 64 Chart.yaml", Repo: [2]string{"charts", "helm"}, Method: "PUT", Path: "/helm/charts/charts/bomb-1.0.0.tgz", Body: chartBody,
			File: chartBody, StoredPath: "charts/bomb-1.0.0.tgz"},
		{Name: "chart with a 1 MiB Chart.yaml", Repo: [2]string{"charts", "helm"}, Method: "PUT", Path: "/helm/charts/charts/bomb-1.0.0.tgz",
			Body: hugeChart, File: hugeChart, StoredPath: "charts/bomb-1.0.0.tgz"},
		{Name: "conda .tar.bz2 of 1 GiB of zeros", Repo: [2]string{"chan", "conda"}, Method: "PUT", Path: "/conda/chan/noarch/bomb-1.0-0.tar.bz2", Body: condaBomb,
			File: condaBomb, StoredPath: "noarch/bomb-1.0-0.tar.bz2"},
		{Name: ".crate of 256 MiB of zeros", Repo: [2]string{"rust", "crates"}, Method: "PUT", Path: "/crates/rust/api/v1/crates/new", Body: cratePub.Bytes(),
			File: crate, StoredPath: "bomb/1.0.0/bomb-1.0.0.crate"},
		{Name: "module zip whose go.mod unpacks 256 MiB", Repo: [2]string{"gomods", "go"}, Method: "PUT", Path: "/go/gomods/upload",
			Body: modZip, Header: map[string]string{"Content-Type": "application/zip"}, File: modZip, StoredPath: "example.com/bomb/@v/v1.0.0.zip"},
		{Name: "composer zip whose composer.json unpacks 256 MiB", Repo: [2]string{"php", "composer"}, Method: "PUT", Path: "/composer/php?version=1.0.0",
			Body: composerZip, Header: map[string]string{"Content-Type": "application/zip"}, File: composerZip, StoredPath: "bomb/pkg/1.0.0/bomb-pkg-1.0.0.zip"},
	}
}

type tarFile struct {
	name string
	data []byte // nil: zeroSize zeros
}

const zeroSize = 256 << 20

func tgzFiles(t Fataler, files ...tarFile) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		size := int64(len(f.data))
		var r io.Reader = bytes.NewReader(f.data)
		if f.data == nil {
			size, r = zeroSize, io.LimitReader(zeroReader{}, zeroSize)
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: size}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = zw.Close()
	return b.Bytes()
}

// zipZeros is a zip whose one member is zeroSize zeros, deflated.
func zipZeros(t Fataler, name string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, err := w.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, io.LimitReader(zeroReader{}, zeroSize)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
