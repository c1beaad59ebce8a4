// Package origintest starts a real single-node origin (Raft, bbolt, blob
// store) inside a test, served by httptest, with helpers to call it.
package origintest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"

	"github.com/depot-registry/depot/origin"
)

// AdminPassword is the admin's password once Start has changed it.
const AdminPassword = "admin-Secret-pw1"

// Env is a running origin.
type Env struct {
	T      testing.TB
	Origin *origin.Origin
	Server *httptest.Server
	URL    string // base URL, no trailing slash: the origin's, or an edge's in front of it

	DataDir string
	Admin   string // access token of the admin, password already changed
	// With Options.TLS: the certificate (for 127.0.0.1) the origin and an
	// edge in front of it serve, its key, and a client that trusts it.
	CertFile, KeyFile string
	Client            *http.Client
	Clock             *Clock // the origin's clock; Advance it instead of sleeping
	// OnCreateRepo, when set, is called with each repository CreateRepo
	// made (an edge in front of the origin is given it).
	OnCreateRepo func(id string)
}

// Clock is the wall clock plus an offset that tests move forward.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the shifted time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Options tweak the origin; Config is applied over test defaults.
type Options struct {
	Config func(*origin.Config)
	// KeepInitialPassword leaves the admin's forced password change pending.
	KeepInitialPassword bool
	// Log receives the origin's log (text lines); nil discards it.
	Log io.Writer
	// TLS serves HTTPS with a self-signed certificate for 127.0.0.1
	// (Env.CertFile), as clients that send credentials only over HTTPS
	// (the go command) need.
	TLS bool
	// Listener serves the origin (nil: a port of the system's choice),
	// for a test that must know the origin's URL before it starts.
	Listener net.Listener
}

// InitialAdminPassword is the password the admin starts with.
const InitialAdminPassword = "initial-admin-pw"

// Start runs an origin in a temp dir; it stops when the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	cfg := origin.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.GossipAddr = "127.0.0.1:0"
	cfg.FastGossip = true
	cfg.RaftTimeout = 100 * time.Millisecond
	cfg.AdminPassword = InitialAdminPassword
	cfg.JWTSecret = "test-secret-test-secret-test-secret-0123456789"
	cfg.RateLimit = 0
	cfg.RateLimitLogin = 1000
	// The host's free space must not decide a test (a test of the guard
	// sets its own minimum and statfs).
	cfg.MinFreeBytes = 0
	// Tests create and sign in many users: cheap argon2 parameters keep
	// them fast; verification reads the parameters from each hash.
	cfg.PasswordParams = auth.PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}
	clock := &Clock{}
	cfg.Clock = clock.Now
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	o, err := origin.New(t.Context(), cfg, log, io.Discard)
	if err != nil {
		t.Fatalf("start origin: %v", err)
	}
	srv := httptest.NewUnstartedServer(o.Handler())
	if opts.Listener != nil {
		srv.Listener.Close()
		srv.Listener = opts.Listener
	}
	e := &Env{T: t, Origin: o, Server: srv, DataDir: cfg.DataDir, Clock: clock, Client: http.DefaultClient}
	if opts.TLS {
		cert, pool := e.selfSigned()
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		e.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	} else {
		srv.Start()
	}
	e.URL = srv.URL
	t.Cleanup(func() { srv.Close(); o.Close() })
	if !opts.KeepInitialPassword {
		tok := e.Login("admin", InitialAdminPassword)
		e.Do("PUT", "/api/v1/users/me", tok, map[string]string{"current_password": InitialAdminPassword, "password": AdminPassword}).Want(200)
		e.Admin = e.Login("admin", AdminPassword)
	}
	return e
}

// For returns a copy of e whose calls report to t: use it in subtests, so
// a failed call stops the subtest and not its parent.
func (e *Env) For(t testing.TB) *Env {
	c := *e
	c.T = t
	return &c
}

// Response is a finished call.
type Response struct {
	T      testing.TB
	Status int
	Header http.Header
	Body   []byte
}

// Want fails the test unless the status is code; it returns r for chaining.
func (r *Response) Want(code int) *Response {
	r.T.Helper()
	if r.Status != code {
		r.T.Fatalf("status %d, want %d; body: %s", r.Status, code, r.Body)
	}
	return r
}

// JSON decodes the body into v.
func (r *Response) JSON(v any) *Response {
	r.T.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.T.Fatalf("decode %s: %v", r.Body, err)
	}
	return r
}

// Map decodes the body as a JSON object.
func (r *Response) Map() map[string]any {
	r.T.Helper()
	var m map[string]any
	r.JSON(&m)
	return m
}

// ErrorCode is error.code of an error body ("" when absent).
func (r *Response) ErrorCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Error.Code
}

// WantError fails the test unless the status is code and the body is the
// spec's error body {"error":{"code","message","details"}} with errCode, a
// non-empty message and an object as details. It returns r for chaining.
func (r *Response) WantError(status int, errCode string) *Response {
	r.T.Helper()
	r.Want(status)
	var b struct {
		Error *struct {
			Code    *string         `json:"code"`
			Message *string         `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil || b.Error == nil || b.Error.Code == nil || b.Error.Message == nil {
		r.T.Fatalf("status %d: body is not an error body: %s", r.Status, r.Body)
	}
	if *b.Error.Code != errCode {
		r.T.Fatalf("status %d: error code %q, want %q; body: %s", r.Status, *b.Error.Code, errCode, r.Body)
	}
	if *b.Error.Message == "" {
		r.T.Fatalf("status %d: empty error message: %s", r.Status, r.Body)
	}
	if d := bytes.TrimSpace(b.Error.Details); len(d) == 0 || d[0] != '{' {
		r.T.Fatalf("status %d: error details is not an object: %s", r.Status, r.Body)
	}
	return r
}

// Details is error.details of an error body (nil when absent).
func (r *Response) Details() map[string]any {
	var b struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Error.Details
}

// WantField fails the test unless error.details.field is field.
func (r *Response) WantField(field string) *Response {
	r.T.Helper()
	if got, _ := r.Details()["field"].(string); got != field {
		r.T.Fatalf("error details.field %q, want %q; body: %s", got, field, r.Body)
	}
	return r
}

// Do calls the origin (or the edge in front of it, see URL). body may be nil, []byte/string (sent raw) or any
// value (sent as JSON). auth is a bearer token, "" for none, or a full
// Authorization header value when it contains a space.
func (e *Env) Do(method, path, auth string, body any) *Response {
	e.T.Helper()
	return e.DoHeader(method, path, auth, body, nil)
}

// DoHeader is Do with extra request headers.
func (e *Env) DoHeader(method, path, auth string, body any, header map[string]string) *Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if auth != "" {
		if bytes.ContainsRune([]byte(auth), ' ') {
			req.Header.Set("Authorization", auth)
		} else {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
	}
	if rd != nil && strings.HasPrefix(path, "/api/") {
		// The API takes JSON only; a test of another type says so.
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	e.checkAnswer(req, resp.StatusCode, resp.Header, data)
	return &Response{T: e.T, Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Login returns an access token.
func (e *Env) Login(user, pass string) string {
	e.T.Helper()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": user, "password": pass}).Want(200).JSON(&out)
	return out.AccessToken
}

// CreateUser creates a user (as admin) and returns its id.
func (e *Env) CreateUser(name, role, password string) string {
	e.T.Helper()
	var out struct {
		ID string `json:"id"`
	}
	e.Do("POST", "/api/v1/users", e.Admin, map[string]string{"username": name, "email": name + "@example.com",
		"password": password, "role": role}).Want(201).JSON(&out)
	return out.ID
}

// CreateRepo creates a repository (as admin) and returns its id.
func (e *Env) CreateRepo(name, format string, public bool) string {
	e.T.Helper()
	var out struct {
		ID string `json:"id"`
	}
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": name, "format": format, "public": public}).Want(201).JSON(&out)
	if e.OnCreateRepo != nil {
		e.OnCreateRepo(out.ID)
	}
	return out.ID
}

// Token creates an API token for the user behind access and returns its secret.
func (e *Env) Token(access string, scopes []string, expires *time.Time) string {
	e.T.Helper()
	body := map[string]any{"name": "t", "scopes": scopes}
	if expires != nil {
		body["expires_at"] = expires.UTC().Format(time.RFC3339Nano)
	}
	var out struct {
		Token string `json:"token"`
	}
	e.Do("POST", "/api/v1/users/me/tokens", access, body).Want(201).JSON(&out)
	return out.Token
}

// RepoCounters reads a repository's artifact_count and size_bytes.
func (e *Env) RepoCounters(repoID string) (count, size int64) {
	e.T.Helper()
	var r struct {
		ArtifactCount int64 `json:"artifact_count"`
		SizeBytes     int64 `json:"size_bytes"`
	}
	e.Do("GET", "/api/v1/repositories/"+repoID, e.Admin, nil).Want(200).JSON(&r)
	return r.ArtifactCount, r.SizeBytes
}

// Grant gives a user (or group, when group is true) permissions on a repo.
func (e *Env) Grant(repoID, subjectID string, group bool, perms ...string) string {
	e.T.Helper()
	body := map[string]any{"repository_id": repoID, "permissions": perms}
	if group {
		body["group_id"] = subjectID
	} else {
		body["user_id"] = subjectID
	}
	var out struct {
		ID string `json:"id"`
	}
	e.Do("POST", "/api/v1/permissions", e.Admin, body).Want(201).JSON(&out)
	return out.ID
}

// selfSigned gives the Env a certificate (see SelfSigned).
func (e *Env) selfSigned() (tls.Certificate, *x509.CertPool) {
	var cert tls.Certificate
	var pool *x509.CertPool
	e.CertFile, e.KeyFile, cert, pool = SelfSigned(e.T)
	return cert, pool
}

// SelfSigned makes a certificate and key for 127.0.0.1 and localhost,
// writes them to files, and returns the files, the certificate and a pool
// that trusts it.
func SelfSigned(t testing.TB) (certFile, keyFile string, cert tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "depot test"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, cert, pool
}
