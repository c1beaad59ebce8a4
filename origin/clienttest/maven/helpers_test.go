package maven_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// mvn is an isolated Maven setup (clienttest.Maven).
type mvn = clienttest.Maven

func newMvn(t *testing.T, url, user, secret string) *mvn {
	return clienttest.NewMaven(t, url, user, secret)
}

var deployArgs = clienttest.DeployArgs

// makeJar writes a small jar whose one resource holds marker.
func makeJar(t *testing.T, dir, name, marker string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: depot tests\r\n\r\n"},
		{"depot/marker.txt", marker + "\n"},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, buf.Bytes()
}

func basic(user, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))
}

func sha1hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

type artifact struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	PackageName string `json:"package_name"`
	Version     string `json:"version"`
	SizeBytes   int64  `json:"size_bytes"`
	UploadedBy  string `json:"uploaded_by"`
	Checksums   struct {
		MD5, SHA1, SHA256, SHA512 string
	} `json:"checksums"`
}

// assertListed checks the REST API shows version of pkg with files
// uploaded by user: in the package list, its versions, and each
// artifact's record with checksums and size.
func assertListed(t *testing.T, e *origintest.Env, repoID, pkg, version string, files int, user string) {
	t.Helper()
	var pkgs struct {
		Packages []struct {
			Name   string `json:"name"`
			Format string `json:"format"`
		} `json:"packages"`
	}
	e.Do("GET", "/api/v1/packages?repository_id="+repoID+"&query="+pkg, e.Admin, nil).Want(200).JSON(&pkgs)
	found := false
	for _, p := range pkgs.Packages {
		found = found || (p.Name == pkg && p.Format == "maven")
	}
	if !found {
		t.Fatalf("package %s not listed: %+v", pkg, pkgs)
	}
	var versions struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
			FileCount  int    `json:"file_count"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/"+pkg+"/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&versions)
	for _, v := range versions.Versions {
		if v.Version != version {
			continue
		}
		if v.FileCount != files {
			t.Errorf("%s %s has %d files, want %d", pkg, version, v.FileCount, files)
		}
		var a artifact
		e.Do("GET", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(200).JSON(&a)
		if a.PackageName != pkg || a.Version != version || a.UploadedBy != user || a.SizeBytes <= 0 ||
			len(a.Checksums.SHA1) != 40 || len(a.Checksums.MD5) != 32 || len(a.Checksums.SHA256) != 64 {
			t.Errorf("artifact record %+v", a)
		}
		return
	}
	t.Fatalf("%s %s not in versions %+v", pkg, version, versions)
}

// unzipMarker returns depot/marker.txt of a jar's bytes.
func unzipMarker(t *testing.T, jar string) string {
	t.Helper()
	zr, err := zip.NewReader(strings.NewReader(jar), int64(len(jar)))
	if err != nil {
		t.Fatalf("not a jar: %v", err)
	}
	for _, f := range zr.File {
		if f.Name == "depot/marker.txt" {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			return string(b)
		}
	}
	t.Fatal("jar has no marker")
	return ""
}
