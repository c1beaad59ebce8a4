package api_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

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
