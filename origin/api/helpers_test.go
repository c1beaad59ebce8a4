package api_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// userPW is the password of every user the tests create.
const userPW = "user-Password-1"

// user is a created account and an access token of it.
type user struct {
	id, name, token string
}

// newUser creates a user with role and signs it in.
func newUser(e *origintest.Env, name, role string) user {
	e.T.Helper()
	id := e.CreateUser(name, role, userPW)
	return user{id: id, name: name, token: e.Login(name, userPW)}
}

// basic is an Authorization header value with Basic credentials.
func basic(name, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+pass))
}

// artifact is the JSON body of a generic upload and of GET /artifacts/:id.
type artifact struct {
	ID           string `json:"id"`
	RepositoryID string `json:"repository_id"`
	Path         string `json:"path"`
	PackageName  string `json:"package_name"`
	Version      string `json:"version"`
	Format       string `json:"format"`
	SizeBytes    int64  `json:"size_bytes"`
	Checksums    struct {
		MD5    string `json:"md5"`
		SHA1   string `json:"sha1"`
		SHA256 string `json:"sha256"`
	} `json:"checksums"`
	UploadedAt string `json:"uploaded_at"`
	UploadedBy string `json:"uploaded_by"`
}

// put uploads body to /generic/<path> with cred and expects 201.
func put(e *origintest.Env, cred, path, body string) artifact {
	e.T.Helper()
	var a artifact
	e.Do("PUT", "/generic/"+strings.TrimPrefix(path, "/"), cred, body).Want(201).JSON(&a)
	if a.ID == "" {
		e.T.Fatalf("upload of %s answered no artifact id", path)
	}
	return a
}

// repo is the JSON of a repository.
type repo struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Format        string `json:"format"`
	Description   string `json:"description"`
	Public        bool   `json:"public"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	ArtifactCount int64  `json:"artifact_count"`
	SizeBytes     int64  `json:"size_bytes"`
}

// getRepo reads a repository as admin.
func getRepo(e *origintest.Env, id string) repo {
	e.T.Helper()
	var r repo
	e.Do("GET", "/api/v1/repositories/"+id, e.Admin, nil).Want(200).JSON(&r)
	return r
}

// wantArtifactCount fails unless the repository holds n artifacts.
func wantArtifactCount(t *testing.T, e *origintest.Env, repoID string, n int64) {
	t.Helper()
	if r := getRepo(e, repoID); r.ArtifactCount != n {
		t.Fatalf("repository %s: artifact_count %d, want %d", r.Name, r.ArtifactCount, n)
	}
}
