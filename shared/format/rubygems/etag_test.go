package rubygems_test

import (
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/rubygems"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestCompactIndexETags: the compact index's files are tagged with the
// MD5 of their bytes, which is what bundler sends as If-None-Match and
// checks a fetched file against (any other tag and it refuses the file),
// and are answered 304 when it has them.
func TestCompactIndexETags(t *testing.T) {
	e := formattest.New(t)
	e.Repo("gems", "rubygems")
	srv := e.Node(func(env *format.Env) []format.Format { return []format.Format{rubygems.New(env)} })
	if code, body := e.Do("POST", srv.URL+"/rubygems/gems/api/v1/gems", "application/octet-stream", formattest.Gem(t, "demogem", "1.0.0")); code != http.StatusOK {
		t.Fatalf("push: %d %s", code, body)
	}
	for _, path := range []string{"/versions", "/names", "/info/demogem"} {
		c := formattest.Call{Method: "GET", Path: "/rubygems/gems" + path}
		a := formattest.Fetch(t, srv.URL, c, e.Basic())
		sum := md5.Sum([]byte(a.Body))
		if tag := `"` + hex.EncodeToString(sum[:]) + `"`; a.Status != http.StatusOK || a.Header.Get("ETag") != tag {
			t.Errorf("%s: %d, ETag %q, want %s", path, a.Status, a.Header.Get("ETag"), tag)
			continue
		}
		c.Header = map[string]string{"If-None-Match": a.Header.Get("ETag")}
		if r := formattest.Fetch(t, srv.URL, c, e.Basic()); r.Status != http.StatusNotModified || r.Body != "" {
			t.Errorf("%s again with its tag: %d %q", path, r.Status, r.Body)
		}
	}
}
