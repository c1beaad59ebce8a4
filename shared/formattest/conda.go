package formattest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/klauspost/compress/zstd"
)

// CondaFiles are a conda package's info files and one file it installs.
func CondaFiles(name, version, subdir string, depends []string, content string) (info, payload map[string]string) {
	index, _ := json.Marshal(map[string]any{"name": name, "version": version, "build": "0", "build_number": 0, "depends": depends,
		"subdir": subdir, "timestamp": 1700000000000, "license": "MIT"})
	path := "share/" + name + "/hello.txt"
	sum := sha256.Sum256([]byte(content))
	paths, _ := json.Marshal(map[string]any{"paths_version": 1, "paths": []map[string]any{{"_path": path, "path_type": "hardlink",
		"sha256": hex.EncodeToString(sum[:]), "size_in_bytes": len(content)}}})
	return map[string]string{"info/index.json": string(index), "info/paths.json": string(paths), "info/files": path + "\n"},
		map[string]string{path: content}
}

// DotConda is a .conda package: a zip of metadata.json and two zstd'd tars.
func DotConda(t Fataler, base string, info, payload map[string]string) []byte {
	t.Helper()
	enc, _ := zstd.NewWriter(nil)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range map[string][]byte{"metadata.json": []byte(`{"conda_pkg_format_version": 2}`),
		"info-" + base + ".tar.zst": enc.EncodeAll(Tar(t, info), nil), "pkg-" + base + ".tar.zst": enc.EncodeAll(Tar(t, payload), nil)} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
