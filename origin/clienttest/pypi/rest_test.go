package pypi_test

import (
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// upload is what was published of one version: its package (normalized
// project name), version, uploader and the dist files.
type upload struct {
	Package, Version, User string
	Files                  []string
}

// checkREST asserts that every upload is a package version of the REST
// API under its normalized project name, with one artifact per file
// carrying checksums, size and uploader, and that the repository's totals
// follow.
func checkREST(t *testing.T, e *origintest.Env, repoID string, ups []upload) {
	t.Helper()
	var pkgs struct {
		Packages []struct {
			Name          string `json:"name"`
			Format        string `json:"format"`
			LatestVersion string `json:"latest_version"`
			VersionCount  int    `json:"version_count"`
		} `json:"packages"`
	}
	e.Do("GET", "/api/v1/packages?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&pkgs)
	if len(pkgs.Packages) != len(ups) {
		t.Fatalf("packages: %+v", pkgs.Packages)
	}
	var count, total int64
	for _, u := range ups {
		found := false
		for _, p := range pkgs.Packages {
			if p.Name == u.Package && p.LatestVersion == u.Version && p.Format == "pypi" && p.VersionCount == 1 {
				found = true
			}
		}
		if !found {
			t.Fatalf("package %s %s not listed: %+v", u.Package, u.Version, pkgs.Packages)
		}
		sums := map[string]int64{}
		var size int64
		for _, f := range u.Files {
			s, n := sha256File(t, f)
			sums[s] = n
			size += n
		}
		var vs struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
				SizeBytes  int64  `json:"size_bytes"`
				FileCount  int    `json:"file_count"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/"+u.Package+"/versions?repository_id="+repoID, e.Admin, nil).Want(200).JSON(&vs)
		if len(vs.Versions) != 1 || vs.Versions[0].Version != u.Version || vs.Versions[0].FileCount != len(u.Files) ||
			vs.Versions[0].SizeBytes != size {
			t.Fatalf("versions of %s: %+v; want %s with %d files, %d bytes", u.Package, vs.Versions, u.Version, len(u.Files), size)
		}
		var a struct {
			PackageName string `json:"package_name"`
			Version     string `json:"version"`
			Format      string `json:"format"`
			SizeBytes   int64  `json:"size_bytes"`
			UploadedBy  string `json:"uploaded_by"`
			Checksums   struct {
				MD5    string `json:"md5"`
				SHA1   string `json:"sha1"`
				SHA256 string `json:"sha256"`
			} `json:"checksums"`
		}
		e.Do("GET", "/api/v1/artifacts/"+vs.Versions[0].ArtifactID, e.Admin, nil).Want(200).JSON(&a)
		n, ok := sums[a.Checksums.SHA256]
		if !ok || n != a.SizeBytes || len(a.Checksums.MD5) != 32 || len(a.Checksums.SHA1) != 40 ||
			a.UploadedBy != u.User || a.PackageName != u.Package || a.Version != u.Version || a.Format != "pypi" {
			t.Fatalf("artifact of %s %s: %+v; want one of the files %v", u.Package, u.Version, a, sums)
		}
		count += int64(len(u.Files))
		total += size
	}
	gotCount, gotSize := e.RepoCounters(repoID)
	if gotCount != count || gotSize != total {
		t.Fatalf("repository totals: %d artifacts, %d bytes; want %d, %d", gotCount, gotSize, count, total)
	}
}
