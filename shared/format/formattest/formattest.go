// Package formattest runs format handlers without a whole origin: a real
// metadata store in a temporary directory, an in-memory blob store, a
// committer that applies commands one at a time in log order (as a Raft
// log does), and an administrator with an API token. Each call to Node
// builds the handlers of one more origin over the same store, with its
// own node-local state (locks, scratch space), so tests can race writes
// decided on different nodes.
package formattest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob/mem"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// Env is the shared state of the nodes of one test.
type Env struct {
	t     testing.TB
	Store *meta.Store
	Blobs *mem.Store
	// Token is the administrator's API token; use it as the password of
	// user "admin" or as a Bearer token.
	Token string
	// Hop delays every commit before it reaches the log, as forwarding a
	// write to the leader does: races between nodes then overlap the way
	// they do over a network.
	Hop time.Duration

	mu sync.Mutex // the log applies one entry at a time
}

// New opens an empty store with an administrator.
func New(t testing.TB) *Env {
	t.Helper()
	store, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &Env{t: t, Store: store, Blobs: mem.New()}
	secret, hash, err := auth.NewAPIToken()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, c := range []meta.Command{
		&meta.UserCreate{User: meta.User{ID: "admin", Username: "admin", Role: meta.RoleAdmin, CreatedAt: now, UpdatedAt: now}},
		&meta.TokenCreate{Token: meta.Token{ID: "admin-token", UserID: "admin", Name: "test", Scopes: []string{"admin"}, Hash: hash, CreatedAt: now}},
	} {
		if _, err := e.Apply(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	e.Token = secret
	return e
}

// Apply commits a command as the log would: one at a time, returning the
// index and the command's own error.
func (e *Env) Apply(_ context.Context, c meta.Command) (uint64, error) {
	data, err := meta.Encode(c)
	if err != nil {
		return 0, err
	}
	if e.Hop > 0 {
		time.Sleep(e.Hop)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.Store.ApplyBatch([]meta.Entry{{Data: data}})
	return e.Store.LastApplied(), res[0].Err
}

// Repo creates a repository.
func (e *Env) Repo(name, formatName string) *meta.Repository {
	e.t.Helper()
	r := meta.Repository{ID: "repo-" + name, Name: name, Format: formatName, CreatedAt: time.Now().UTC()}
	if _, err := e.Apply(context.Background(), &meta.RepoCreate{Repo: r}); err != nil {
		e.t.Fatal(err)
	}
	return &r
}

// Writer is the write environment of one node's format handlers over
// env.
func (e *Env) Writer(env *format.Env) *format.Writer {
	return &format.Writer{Env: env, Blobs: e.Blobs, Ingest: e.Blobs, Commit: e, NewID: auth.NewID,
		ScratchDir: e.t.TempDir()}
}

// Basic is the administrator's Authorization header value (HTTP Basic
// with the API token as the password).
func (e *Env) Basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+e.Token))
}

// Do sends a request with the administrator's credentials and returns
// the status and body.
func (e *Env) Do(method, url, contentType string, body []byte) (int, []byte) {
	e.t.Helper()
	c := Call{Method: method, Path: url, Body: body}
	if contentType != "" {
		c.Header = map[string]string{"Content-Type": contentType}
	}
	a := Fetch(e.t, "", c, e.Basic())
	return a.Status, []byte(a.Body)
}

// Node serves the formats build makes, each under its prefixes, on a
// test server: one origin's handlers, with their own node-local state.
func (e *Env) Node(build func(*format.Env) []format.Format) *httptest.Server {
	return e.serve(build, true)
}

// ReadNode serves only the read routes of the formats build makes, with
// no write environment at all, as an edge does: write routes answer 405.
func (e *Env) ReadNode(build func(*format.Env) []format.Format) *httptest.Server {
	return e.serve(build, false)
}

func (e *Env) serve(build func(*format.Env) []format.Format, writes bool) *httptest.Server {
	authn := &auth.Authenticator{Meta: e.Store, Now: time.Now, Hasher: auth.NewHasher(1), JWT: auth.NewJWT(auth.RandomSecret(), time.Now)}
	env := &format.Env{Meta: e.Store, Now: time.Now, Tokens: authn}
	var w *format.Writer
	if writes {
		w = e.Writer(env)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	for _, f := range build(env) {
		srv := format.NewServer(f, env, w, authn, log)
		for _, prefix := range format.Prefixes(f) {
			mux.Handle(prefix+"/", httpx.NewFormatHandler(srv, prefix, e.Blobs))
		}
	}
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return srv
}

// Fataler is the part of testing.TB the content builders need (a
// benchmark program passes its own).
type Fataler interface {
	Helper()
	Fatal(args ...any)
}

// Tgz is a gzip'd tar of files (name -> content), the shape of an npm
// tarball.
func Tgz(t Fataler, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
