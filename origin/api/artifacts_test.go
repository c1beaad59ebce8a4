package api_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

func sums(data string) (md5sum, sha1sum, sha256sum string) {
	m, s1, s2 := md5.Sum([]byte(data)), sha1.Sum([]byte(data)), sha256.Sum256([]byte(data))
	return hex.EncodeToString(m[:]), hex.EncodeToString(s1[:]), hex.EncodeToString(s2[:])
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	repoID := e.CreateRepo("files", "generic", false)
	writer := newUser(e, "writer", "user")
	deleter := newUser(e, "deleter", "user")
	e.Grant(repoID, writer.id, false, "write")
	e.Grant(repoID, deleter.id, false, "delete")

	const body = "hello, artifact"
	wantMD5, wantSHA1, wantSHA256 := sums(body)
	var up artifact
	e.DoHeader("PUT", "/generic/files/greeter/1.2.3/hello.txt", writer.token, body, map[string]string{"Content-Type": "text/plain"}).
		Want(201).JSON(&up)

	t.Run("get", func(t *testing.T) {
		e := e.For(t)
		var a artifact
		e.Do("GET", "/api/v1/artifacts/"+up.ID, writer.token, nil).Want(200).JSON(&a)
		if a.ID != up.ID || a.RepositoryID != repoID || a.PackageName != "greeter" || a.Version != "1.2.3" ||
			a.Format != "generic" || a.SizeBytes != int64(len(body)) || a.UploadedBy != "writer" || a.UploadedAt == "" {
			t.Fatalf("artifact %+v", a)
		}
		if a.Checksums.MD5 != wantMD5 || a.Checksums.SHA1 != wantSHA1 || a.Checksums.SHA256 != wantSHA256 {
			t.Fatalf("checksums %+v, want %s %s %s", a.Checksums, wantMD5, wantSHA1, wantSHA256)
		}
		if r := getRepo(e, repoID); r.ArtifactCount != 1 || r.SizeBytes != int64(len(body)) {
			t.Fatalf("repository counters after one upload: %+v", r)
		}
		e.Do("GET", "/api/v1/artifacts/no-such-artifact", writer.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/artifacts/no-such-artifact/download", writer.token, nil).WantError(404, "NOT_FOUND")
	})

	t.Run("download", func(t *testing.T) {
		e := e.For(t)
		r := e.Do("GET", "/api/v1/artifacts/"+up.ID+"/download", writer.token, nil).Want(200)
		if string(r.Body) != body {
			t.Fatalf("downloaded %q, want %q", r.Body, body)
		}
		h := r.Header
		if !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
			t.Fatalf("Content-Type %q, want text/plain", h.Get("Content-Type"))
		}
		if h.Get("X-Checksum-Sha256") != wantSHA256 || h.Get("X-Checksum-Sha1") != wantSHA1 || h.Get("X-Checksum-Md5") != wantMD5 {
			t.Fatalf("checksum headers %v", h)
		}
		if !strings.Contains(h.Get("Content-Disposition"), "hello.txt") {
			t.Fatalf("Content-Disposition %q", h.Get("Content-Disposition"))
		}
		// Without a declared type the file name decides.
		j := put(e, writer.token, "files/greeter/1.2.3/data.json", `{"a":1}`)
		if ct := e.Do("GET", "/api/v1/artifacts/"+j.ID+"/download", writer.token, nil).Want(200).Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("Content-Type of data.json %q", ct)
		}
		b := put(e, writer.token, "files/greeter/1.2.3/blob", "\x00\x01")
		if ct := e.Do("GET", "/api/v1/artifacts/"+b.ID+"/download", writer.token, nil).Want(200).Header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Fatalf("Content-Type of an extensionless file %q", ct)
		}
	})

	t.Run("properties", func(t *testing.T) {
		e := e.For(t)
		reader := newUser(e, "prop-reader", "user")
		e.Grant(repoID, reader.id, false, "read")
		a := put(e, writer.token, "files/greeter/3.0/props.bin", "with properties")
		type props struct {
			ArtifactID string              `json:"artifact_id"`
			Properties map[string][]string `json:"properties"`
		}
		get := func() map[string][]string {
			var out props
			e.Do("GET", "/api/v1/artifacts/"+a.ID+"/properties", reader.token, nil).Want(200).JSON(&out)
			if out.ArtifactID != a.ID || out.Properties == nil {
				t.Fatalf("properties answer %+v", out)
			}
			return out.Properties
		}
		if got := get(); len(got) != 0 {
			t.Fatalf("a new artifact's properties: %v", got)
		}
		// Setting them is writing; reading them is reading.
		body := map[string]any{"properties": map[string]any{"build.number": "42", "qa.status": []string{"passed", "signed"}}}
		e.Do("PUT", "/api/v1/artifacts/"+a.ID+"/properties", reader.token, body).WantError(403, "FORBIDDEN")
		e.Do("PUT", "/api/v1/artifacts/"+a.ID+"/properties", "", body).WantError(401, "UNAUTHORIZED")
		var out props
		e.Do("PUT", "/api/v1/artifacts/"+a.ID+"/properties", writer.token, body).Want(200).JSON(&out)
		want := map[string][]string{"build.number": {"42"}, "qa.status": {"passed", "signed"}}
		if !reflect.DeepEqual(out.Properties, want) || !reflect.DeepEqual(get(), want) {
			t.Fatalf("after PUT: answered %v, read %v; want %v", out.Properties, get(), want)
		}
		var art struct {
			Properties map[string][]string `json:"properties"`
		}
		e.Do("GET", "/api/v1/artifacts/"+a.ID, reader.token, nil).Want(200).JSON(&art)
		if !reflect.DeepEqual(art.Properties, want) {
			t.Fatalf("the artifact's record shows %v", art.Properties)
		}
		// PATCH changes the keys named; null removes one.
		e.Do("PATCH", "/api/v1/artifacts/"+a.ID+"/properties", writer.token,
			map[string]any{"properties": map[string]any{"qa.status": nil, "build.name": []string{"app"}}}).Want(200)
		if got := get(); !reflect.DeepEqual(got, map[string][]string{"build.number": {"42"}, "build.name": {"app"}}) {
			t.Fatalf("after PATCH: %v", got)
		}
		// Bad input is refused whole, naming the problem.
		for _, bad := range []map[string]any{
			{"properties": map[string]any{"has space": "x"}},
			{"properties": map[string]any{"k": strings.Repeat("v", 2401)}},
			{"properties": map[string]any{"k": "a\nb"}},
			{"properties": map[string]any{"k": 7}},
			{"nothing": true},
		} {
			e.Do("PATCH", "/api/v1/artifacts/"+a.ID+"/properties", writer.token, bad).WantError(400, "VALIDATION_FAILED").WantField("properties")
		}
		e.Do("PUT", "/api/v1/artifacts/"+a.ID+"/properties", writer.token, map[string]any{"properties": map[string]any{"k": nil}}).
			WantError(400, "VALIDATION_FAILED")
		if got := get(); len(got) != 2 {
			t.Fatalf("after refused changes: %v", got)
		}
		e.Do("PUT", "/api/v1/artifacts/no-such/properties", writer.token, body).WantError(404, "NOT_FOUND")
		// Replacing everything with nothing clears them.
		e.Do("PUT", "/api/v1/artifacts/"+a.ID+"/properties", writer.token, map[string]any{"properties": map[string]any{}}).Want(200)
		if got := get(); len(got) != 0 {
			t.Fatalf("after clearing: %v", got)
		}
	})

	t.Run("delete needs delete", func(t *testing.T) {
		e := e.For(t)
		a := put(e, writer.token, "files/greeter/2.0/x.bin", "to be deleted")
		before := getRepo(e, repoID)
		e.Do("DELETE", "/api/v1/artifacts/"+a.ID, writer.token, nil).WantError(403, "FORBIDDEN")
		e.Do("GET", "/api/v1/artifacts/"+a.ID, writer.token, nil).Want(200)
		e.Do("DELETE", "/api/v1/artifacts/"+a.ID, deleter.token, nil).Want(204)
		e.Do("GET", "/api/v1/artifacts/"+a.ID, writer.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/generic/files/greeter/2.0/x.bin", writer.token, nil).WantError(404, "NOT_FOUND")
		e.Do("DELETE", "/api/v1/artifacts/"+a.ID, deleter.token, nil).WantError(404, "NOT_FOUND")
		after := getRepo(e, repoID)
		if after.ArtifactCount != before.ArtifactCount-1 || after.SizeBytes != before.SizeBytes-a.SizeBytes {
			t.Fatalf("counters after delete %d/%d, before %d/%d", after.ArtifactCount, after.SizeBytes, before.ArtifactCount, before.SizeBytes)
		}
	})
}

type pkgList struct {
	Packages []struct {
		Name           string `json:"name"`
		RepositoryID   string `json:"repository_id"`
		Format         string `json:"format"`
		LatestVersion  string `json:"latest_version"`
		VersionCount   int    `json:"version_count"`
		TotalSizeBytes int64  `json:"total_size_bytes"`
		LastUpdated    string `json:"last_updated"`
	} `json:"packages"`
	Total *int `json:"total"`
}

func TestPackages(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	a := e.CreateRepo("repo-a", "generic", false)
	b := e.CreateRepo("repo-b", "generic", false)
	e.CreateRepo("repo-npm", "npm", false)
	put(e, e.Admin, "repo-a/alpha/1.0/alpha.tgz", "aaaa")
	put(e, e.Admin, "repo-a/alpha/1.1/alpha.tgz", "aaaaa")
	put(e, e.Admin, "repo-a/alpha/1.1/alpha.sig", "s")
	put(e, e.Admin, "repo-a/beta/1.0/beta.tgz", "bb")
	put(e, e.Admin, "repo-b/alpha/2.0/alpha.tgz", "aaaaaa")

	list := func(e *origintest.Env, cred, query string) pkgList {
		e.T.Helper()
		var l pkgList
		e.Do("GET", "/api/v1/packages"+query, cred, nil).Want(200).JSON(&l)
		if l.Total == nil || l.Packages == nil {
			e.T.Fatalf("package list without packages or total")
		}
		return l
	}

	t.Run("list", func(t *testing.T) {
		e := e.For(t)
		l := list(e, e.Admin, "")
		if *l.Total != 3 || len(l.Packages) != 3 {
			t.Fatalf("total %d, %d items; want 3", *l.Total, len(l.Packages))
		}
		found := false
		for _, p := range l.Packages {
			if p.Format != "generic" || p.LastUpdated == "" {
				t.Fatalf("package %+v", p)
			}
			if p.Name == "alpha" && p.RepositoryID == a {
				found = true
				if p.VersionCount != 2 || p.LatestVersion != "1.1" || p.TotalSizeBytes != 10 {
					t.Fatalf("alpha in repo-a: %+v; want 2 versions, latest 1.1, 10 bytes", p)
				}
			}
		}
		if !found {
			t.Fatalf("alpha of repo-a not listed: %+v", l.Packages)
		}
	})

	t.Run("filters", func(t *testing.T) {
		e := e.For(t)
		for _, c := range []struct {
			query string
			total int
		}{
			{"?query=alp", 2}, {"?query=ALP", 2}, {"?query=bet", 1}, {"?query=zzz", 0},
			{"?repository_id=" + a, 2}, {"?repository_id=" + b, 1}, {"?repository_id=" + b + "&query=beta", 0},
			{"?format=generic", 3}, {"?format=npm", 0},
		} {
			if l := list(e, e.Admin, c.query); *l.Total != c.total || len(l.Packages) != c.total {
				t.Fatalf("%s: total %d, %d items; want %d", c.query, *l.Total, len(l.Packages), c.total)
			}
		}
		if l := list(e, e.Admin, "?limit=1&page=2"); *l.Total != 3 || len(l.Packages) != 1 {
			t.Fatalf("limit=1&page=2: total %d, %d items", *l.Total, len(l.Packages))
		}
		e.Do("GET", "/api/v1/packages?format=bogus", e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField("format")
		e.Do("GET", "/api/v1/packages?limit=0", e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField("limit")
		e.Do("GET", "/api/v1/packages?repository_id=no-such-repo", e.Admin, nil).WantError(404, "NOT_FOUND")
	})

	t.Run("versions", func(t *testing.T) {
		e := e.For(t)
		var out struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
				SizeBytes  int64  `json:"size_bytes"`
				UploadedAt string `json:"uploaded_at"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/alpha/versions", e.Admin, nil).Want(200).JSON(&out)
		if len(out.Versions) != 3 {
			t.Fatalf("alpha versions %+v, want 3 over both repositories", out.Versions)
		}
		e.Do("GET", "/api/v1/packages/alpha/versions?repository_id="+a, e.Admin, nil).Want(200).JSON(&out)
		if len(out.Versions) != 2 || out.Versions[0].Version != "1.1" || out.Versions[1].Version != "1.0" ||
			out.Versions[0].SizeBytes != 6 || out.Versions[1].SizeBytes != 4 || out.Versions[0].UploadedAt == "" {
			t.Fatalf("alpha versions in repo-a %+v; want 1.1 (6 bytes) then 1.0 (4 bytes)", out.Versions)
		}
		for _, v := range out.Versions {
			var art artifact
			e.Do("GET", "/api/v1/artifacts/"+v.ArtifactID, e.Admin, nil).Want(200).JSON(&art)
			if art.PackageName != "alpha" || art.Version != v.Version || art.RepositoryID != a {
				t.Fatalf("version %s points at %+v", v.Version, art)
			}
		}
		e.Do("GET", "/api/v1/packages/nothing/versions", e.Admin, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/packages/beta/versions?repository_id="+b, e.Admin, nil).WantError(404, "NOT_FOUND")
	})

	t.Run("only readable repositories", func(t *testing.T) {
		e := e.For(t)
		u := newUser(e, "reader", "user")
		e.Grant(b, u.id, false, "read")
		if l := list(e, u.token, ""); *l.Total != 1 || l.Packages[0].RepositoryID != b {
			t.Fatalf("reader of repo-b sees %+v", l.Packages)
		}
		e.Do("GET", "/api/v1/packages?repository_id="+a, u.token, nil).WantError(403, "FORBIDDEN")
		e.Do("GET", "/api/v1/packages/beta/versions", u.token, nil).WantError(404, "NOT_FOUND")
		e.Do("GET", "/api/v1/packages", "", nil).Want(200)
		if l := list(e, "", ""); *l.Total != 0 {
			t.Fatalf("anonymous sees private packages: %+v", l.Packages)
		}
	})
}

type stats struct {
	Repositories   *int64 `json:"repositories"`
	Artifacts      *int64 `json:"artifacts"`
	TotalSizeBytes *int64 `json:"total_size_bytes"`
	Users          *int64 `json:"users"`
	Downloads24h   *int64 `json:"downloads_24h"`
}

func TestAdminStats(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	get := func() stats {
		t.Helper()
		var s stats
		e.Do("GET", "/api/v1/admin/stats", e.Admin, nil).Want(200).JSON(&s)
		if s.Repositories == nil || s.Artifacts == nil || s.TotalSizeBytes == nil || s.Users == nil || s.Downloads24h == nil {
			t.Fatalf("stats lack a field: %+v", s)
		}
		return s
	}
	s0 := get()
	if *s0.Users != 1 || *s0.Repositories != 0 || *s0.Artifacts != 0 || *s0.TotalSizeBytes != 0 || *s0.Downloads24h != 0 {
		t.Fatalf("stats of a new installation: users %d repos %d artifacts %d size %d downloads %d",
			*s0.Users, *s0.Repositories, *s0.Artifacts, *s0.TotalSizeBytes, *s0.Downloads24h)
	}

	u := newUser(e, "counted", "user")
	e.CreateRepo("s1", "generic", false)
	e.CreateRepo("s2", "npm", false)
	a := put(e, e.Admin, "s1/p/1/a", "12345")
	put(e, e.Admin, "s1/p/1/b", "123")
	s1 := get()
	if *s1.Users != 2 || *s1.Repositories != 2 || *s1.Artifacts != 2 || *s1.TotalSizeBytes != 8 || *s1.Downloads24h != 0 {
		t.Fatalf("after uploads: %+v", derefStats(s1))
	}

	e.Do("GET", "/generic/s1/p/1/a", e.Admin, nil).Want(200)
	e.Do("GET", "/api/v1/artifacts/"+a.ID+"/download", e.Admin, nil).Want(200)
	e.Do("HEAD", "/generic/s1/p/1/a", e.Admin, nil).Want(200)
	e.Do("GET", "/api/v1/artifacts/"+a.ID, e.Admin, nil).Want(200) // metadata is not a download
	if s := get(); *s.Downloads24h != 2 {
		t.Fatalf("downloads_24h %d after two downloads, want 2", *s.Downloads24h)
	}

	e.Do("DELETE", "/generic/s1/p/1/b", e.Admin, nil).Want(204)
	if s := get(); *s.Artifacts != 1 || *s.TotalSizeBytes != 5 {
		t.Fatalf("after a delete: %+v", derefStats(s))
	}

	e.Do("GET", "/api/v1/admin/stats", u.token, nil).WantError(403, "FORBIDDEN")
	e.Do("GET", "/api/v1/admin/stats", "", nil).WantError(401, "UNAUTHORIZED")
}

func derefStats(s stats) map[string]int64 {
	return map[string]int64{"repositories": *s.Repositories, "artifacts": *s.Artifacts, "total_size_bytes": *s.TotalSizeBytes,
		"users": *s.Users, "downloads_24h": *s.Downloads24h}
}
