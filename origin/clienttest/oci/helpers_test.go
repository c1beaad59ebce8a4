package oci_test

import (
	"encoding/base64"
	"net/http"
	"sync"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// start runs an origin; opts adjust its configuration.
func start(t *testing.T, opts ...func(*origin.Config)) *origintest.Env {
	t.Helper()
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		for _, o := range opts {
			o(c)
		}
	}})
}

// writer creates a user with read, write and delete on repoID.
func writer(e *origintest.Env, name, repoID string) clienttest.User {
	u := clienttest.NewUser(e, name)
	e.Grant(repoID, u.ID, false, "read", "write", "delete")
	return u
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// recorder watches what a real client sends (it never answers for it).
type recorder struct {
	mu   sync.Mutex
	base http.RoundTripper
	seen []string // "METHOD path?query STATUS"
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rec.base.RoundTrip(req)
	if err == nil {
		rec.mu.Lock()
		rec.seen = append(rec.seen, req.Method+" "+req.URL.RequestURI()+" "+http.StatusText(resp.StatusCode))
		rec.mu.Unlock()
	}
	return resp, err
}

func (rec *recorder) calls() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.seen...)
}
