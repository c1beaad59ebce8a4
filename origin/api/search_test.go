package api_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestSearchChecksum: the artifacts of given bytes are found by their
// MD5, SHA-1 or SHA-256, in either case, in the repositories the caller
// may read and no others (anonymous: the public ones); a checksum of no
// known length is refused.
func TestSearchChecksum(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("open", "generic", true)
	e.CreateRepo("closed", "generic", false)
	body := "the same bytes"
	e.Do("PUT", "/generic/open/tool/1.0/a.bin", e.Admin, body).Want(201)
	e.Do("PUT", "/generic/closed/tool/1.0/a.bin", e.Admin, body).Want(201)
	e.Do("PUT", "/generic/open/tool/2.0/b.bin", e.Admin, "other bytes").Want(201)
	m, s1, s2 := md5.Sum([]byte(body)), sha1.Sum([]byte(body)), sha256.Sum256([]byte(body))
	var got struct {
		Algorithm string
		Total     int
		Results   []struct {
			RepositoryName string `json:"repository_name"`
			Path           string
		}
	}
	for algo, sum := range map[string]string{"md5": hex.EncodeToString(m[:]), "sha1": strings.ToUpper(hex.EncodeToString(s1[:])), "sha256": hex.EncodeToString(s2[:])} {
		e.Do("GET", "/api/v1/search/checksum?checksum="+sum, e.Admin, nil).Want(200).JSON(&got)
		if got.Algorithm != algo || got.Total != 2 || len(got.Results) != 2 {
			t.Errorf("%s as the admin: %+v", algo, got)
		}
		e.Do("GET", "/api/v1/search/checksum?checksum="+sum, "", nil).Want(200).JSON(&got)
		if got.Total != 1 || got.Results[0].RepositoryName != "open" || got.Results[0].Path != "tool/1.0/a.bin" {
			t.Errorf("%s anonymously: %+v", algo, got)
		}
	}
	e.Do("GET", "/api/v1/search/checksum?checksum=abc", e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField("checksum")
	e.Do("GET", "/api/v1/search/checksum?checksum="+strings.Repeat("z", 64), e.Admin, nil).WantError(400, "VALIDATION_FAILED")
	e.Do("GET", "/api/v1/search/checksum?checksum="+strings.Repeat("0", 64), e.Admin, nil).Want(200).JSON(&got)
	if got.Total != 0 || got.Results == nil {
		t.Errorf("nothing found: %+v", got)
	}
}

// TestSearchRefusals: searches refuse what they cannot answer with the
// field to fix, and answer an empty list when nothing matches.
func TestSearchRefusals(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	for _, c := range []struct{ path, field string }{
		{"/api/v1/search/quick", "q"},
		{"/api/v1/search/quick?q=" + strings.Repeat("x", 257), "q"},
		{"/api/v1/search/quick?q=x&limit=0", "limit"},
		{"/api/v1/search/quick?q=x&limit=101", "limit"},
		{"/api/v1/search/suggest?q=", "q"},
		{"/api/v1/search/advanced?format=cobol", "format"},
		{"/api/v1/search/advanced?min_date=yesterday", "min_date"},
		{"/api/v1/search/advanced?min_date=2026-02-02&max_date=2026-02-01", "max_date"},
		{"/api/v1/search/advanced?page=0", "page"},
	} {
		e.Do("GET", c.path, e.Admin, nil).WantError(400, "VALIDATION_FAILED").WantField(c.field)
	}
	e.Do("GET", "/api/v1/search/advanced?repository=nowhere", e.Admin, nil).WantError(404, "NOT_FOUND")
	var got struct{ Results []any }
	e.Do("GET", "/api/v1/search/quick?q=nothing", "", nil).Want(200).JSON(&got)
	if got.Results == nil || len(got.Results) != 0 {
		t.Errorf("nothing found: %+v", got)
	}
}

// TestReindex: an administrator starts a reindex, which reads every
// artifact again in the background while searches answer, and reports
// its progress; no one else may.
func TestReindex(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", true)
	for _, p := range []string{"tool/1.0/tool-1.0.bin", "tool/2.0/tool-2.0.bin", "kit/1.0/kit.zip"} {
		e.Do("PUT", "/generic/files/"+p, e.Admin, "bytes of "+p).Want(201)
	}
	e.CreateUser("user1", "user", "a-long-password-1")
	user := e.Login("user1", "a-long-password-1")
	e.Do("POST", "/api/v1/admin/reindex", user, nil).WantError(403, "FORBIDDEN")
	e.Do("GET", "/api/v1/admin/reindex", user, nil).WantError(403, "FORBIDDEN")
	var st struct {
		Reindex struct {
			Status      string
			Total, Done int
			RequestedBy string `json:"requested_by"`
			FinishedAt  string `json:"finished_at"`
		}
	}
	e.Do("POST", "/api/v1/admin/reindex", e.Admin, nil).Want(202).JSON(&st)
	if st.Reindex.Total != 3 || st.Reindex.RequestedBy != "admin" {
		t.Errorf("started: %+v", st)
	}
	for deadline := time.Now().Add(30 * time.Second); st.Reindex.Status != "completed" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e.Do("GET", "/api/v1/admin/reindex", e.Admin, nil).Want(200).JSON(&st)
	}
	if st.Reindex.Status != "completed" || st.Reindex.Done != 3 || st.Reindex.FinishedAt == "" {
		t.Errorf("finished: %+v", st)
	}
	var got struct{ Results []struct{ Name, Type string } }
	e.Do("GET", "/api/v1/search/quick?q=tool-1.0.bin", "", nil).Want(200).JSON(&got)
	if len(got.Results) != 1 || got.Results[0].Type != "artifact" {
		t.Errorf("by file name: %+v", got)
	}
}
