// Package formattest runs format handlers without a whole origin: a real
// metadata store in a temporary directory, an in-memory blob store, a
// committer that applies commands one at a time in log order (as a Raft
// log does), and an administrator with an API token. Each call to Node
// builds the handlers of one more origin over the same store, with its
// own node-local state (locks, scratch space), so tests can race writes
// decided on different nodes. NewCluster puts each node on its own
// replica of a real cluster instead (cluster/clustertest), and RunRaces
// races every format's writes on two nodes.
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

	// With NewCluster: the nodes' stores and committers, which Node hands
	// out in turn.
	backends []Backend
	next     int
}

// Backend is where one node's handlers read and commit: a replica of the
// metadata and the committer that takes that node's writes to the log.
type Backend struct {
	Store  *meta.Store
	Commit format.Committer
	// Sync, when set, runs before every write the node takes, as an
	// origin catches up with the leader before it decides one.
	Sync func(context.Context) error
}

// NewCluster is an Env over the replicas of a cluster: each Node serves
// on the next backend, setup commands (the administrator, repositories)
// go through the first and are waited for on every one.
func NewCluster(t testing.TB, backends ...Backend) *Env {
	t.Helper()
	e := &Env{t: t, Store: backends[0].Store, Blobs: mem.New(), backends: backends}
	e.init()
	return e
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
	e.init()
	return e
}

// init creates the administrator and its token.
func (e *Env) init() {
	t := e.t
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
}

// Apply commits a command as the log would: one at a time, returning the
// index and the command's own error. In a cluster it goes through the
// first node and returns once every node has applied it.
func (e *Env) Apply(ctx context.Context, c meta.Command) (uint64, error) {
	if e.backends != nil {
		idx, err := e.backends[0].Commit.Apply(ctx, c)
		e.settle(idx)
		return idx, err
	}
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
	return e.writer(env, e)
}

func (e *Env) writer(env *format.Env, commit format.Committer) *format.Writer {
	return &format.Writer{Env: env, Blobs: e.Blobs, Ingest: e.Blobs, Commit: commit, NewID: auth.NewID,
		ScratchDir: e.t.TempDir()}
}

// Settle waits until every node has applied every write acknowledged so
// far (a client reading after its writes sends X-Depot-Min-Index to the
// same end). Nothing to wait for over one store.
func (e *Env) Settle() {
	var last uint64
	for _, b := range e.backends {
		last = max(last, b.Store.LastApplied())
	}
	e.settle(last)
}

func (e *Env) settle(idx uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, b := range e.backends {
		if err := b.Store.WaitIndex(ctx, idx); err != nil {
			e.t.Fatalf("a node did not apply index %d: %v", idx, err)
		}
	}
}

// Basic is the administrator's Authorization header value (HTTP Basic
// with the API token as the password).
func (e *Env) Basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+e.Token))
}

// Do sends a request with the administrator's credentials and returns
// the status and body. A GET or HEAD first settles the nodes: it sees
// every write acknowledged before.
func (e *Env) Do(method, url, contentType string, body []byte) (int, []byte) {
	e.t.Helper()
	if method == http.MethodGet || method == http.MethodHead {
		e.Settle()
	}
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
// no write environment at all, as an edge does: write routes answer 405,
// and what only an origin can answer (a repository the node does not
// hold) a node that writes answers, as an edge forwards it.
func (e *Env) ReadNode(build func(*format.Env) []format.Format) *httptest.Server {
	return e.serve(build, false)
}

func (e *Env) serve(build func(*format.Env) []format.Format, writes bool) *httptest.Server {
	srv := httptest.NewServer(httpx.Forwarded(e.handler(build, writes), httpx.Proxies{}, ""))
	e.t.Cleanup(srv.Close)
	return srv
}

// handler is one node's handlers: writes, or reads with a writing node
// behind them.
func (e *Env) handler(build func(*format.Env) []format.Format, writes bool) http.Handler {
	var origin http.Handler
	if !writes {
		origin = e.handler(build, true)
	}
	b := Backend{Store: e.Store, Commit: e}
	if e.backends != nil {
		b = e.backends[e.next%len(e.backends)]
		e.next++
	}
	authn := &auth.Authenticator{Meta: b.Store, Now: time.Now, Hasher: auth.NewHasher(1), JWT: auth.NewJWT(auth.RandomSecret(), time.Now)}
	env := &format.Env{Meta: b.Store, Now: time.Now, Tokens: authn}
	var w *format.Writer
	if writes {
		w = e.writer(env, b.Commit)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	for _, f := range build(env) {
		srv := format.NewServer(f, env, w, authn, log)
		for _, prefix := range format.Prefixes(f) {
			h := httpx.NewFormatHandler(srv, prefix, e.Blobs)
			h.Upstream = origin
			mux.Handle(prefix+"/", h)
		}
	}
	var h http.Handler = mux
	if b.Sync != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				if err := b.Sync(r.Context()); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			mux.ServeHTTP(w, r)
		})
	}
	// As an origin serves with no external URL: base URLs from the
	// request, and a Vary that says so (see serve).
	return h
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
	if _, err := zw.Write(Tar(t, files)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Tar is an uncompressed tar of files (name -> content).
func Tar(t Fataler, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
