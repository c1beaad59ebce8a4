package api

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/apierr"
)

// FuzzDecode: any body decodes into a request struct or fails with a
// client error (never a panic, never an internal error).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"username":"a","password":"b"}`, `{}`, `[]`, `{"a":1}{"b":2}`, `{"username":5}`, ``, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/api/v1/auth/login", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var v struct {
			Username string   `json:"username"`
			Scopes   []string `json:"scopes"`
			Public   *bool    `json:"public"`
		}
		err := decode(r, &v)
		if err == nil {
			return
		}
		var e *apierr.Error
		if !errors.As(err, &e) || e.Status() >= 500 {
			t.Fatalf("body %q: %v is not a client error", body, err)
		}
	})
}

func FuzzPage(f *testing.F) {
	f.Add("1", "20")
	f.Add("-1", "1000")
	f.Fuzz(func(t *testing.T, pg, lim string) {
		r := httptest.NewRequest("GET", "/x?"+url.Values{"page": {pg}, "limit": {lim}}.Encode(), nil)
		p, err := pageOf(r)
		if err == nil && (p.Number < 1 || p.Number > 1_000_000 || p.Limit < 1 || p.Limit > 100) {
			t.Fatalf("page %d limit %d accepted", p.Number, p.Limit)
		}
	})
}
