// Package oidc signs users in with an OpenID Connect provider: the
// authorization code flow with state, nonce and PKCE, the code exchanged
// and the ID token verified (coreos/go-oidc), and the user read from its
// claims (the provider's userinfo filling in those the ID token lacks).
// What the flow must remember between the redirect and the callback
// travels in a cookie MACed with a key every origin shares, so the
// callback may reach any origin of the cluster.
package oidc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// ErrFlow means a callback that does not complete a sign-in this server
// began (no or a forged flow cookie, a state that differs, too late) or
// that the provider refused: the user starts again.
var ErrFlow = errors.New("oidc: the sign-in could not be completed")

// ErrUnavailable means the provider could not be reached.
var ErrUnavailable = errors.New("oidc: the identity provider cannot be reached")

// FlowTTL bounds the time from the redirect to the callback.
const FlowTTL = 10 * time.Minute

// Config is the client Depot is at the provider.
type Config struct {
	Issuer, ClientID, ClientSecret string
	// RedirectURLs are the callbacks, as registered at the provider: the
	// first, and one per other address browsers reach Depot at (an
	// edge's), as the flow cookie is only sent back to the host that set
	// it.
	RedirectURLs []string
	// Scopes asked for (openid is always among them).
	Scopes []string
	// The claims the user is read from (defaults preferred_username,
	// email, name, groups).
	UsernameClaim, EmailClaim, NameClaim, GroupsClaim string
	// Key MACs the flow cookie: the same on every origin.
	Key []byte
	// Timeout bounds each call to the provider (default 10s).
	Timeout time.Duration
	Now     func() time.Time
}

// Provider is one OpenID provider. Discovery happens at the first use
// (and again until it succeeds), so an origin starts while the provider
// is away.
type Provider struct {
	cfg    Config
	client *http.Client

	mu       sync.Mutex
	op       *gooidc.Provider
	oauth    oauth2.Config
	verifier *gooidc.IDTokenVerifier
}

// New checks cfg.
func New(cfg Config) (*Provider, error) {
	if u, err := url.Parse(cfg.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("OIDC issuer %q: want the provider's https:// URL", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("OIDC: the client id is required")
	}
	if len(cfg.RedirectURLs) == 0 {
		return nil, errors.New("OIDC: the redirect URI is required: <Depot's URL>/api/v1/auth/oidc/callback, as registered at the provider")
	}
	for _, r := range cfg.RedirectURLs {
		if u, err := url.Parse(r); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			!strings.HasSuffix(u.Path, "/api/v1/auth/oidc/callback") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("OIDC redirect URI %q: want <Depot's URL>/api/v1/auth/oidc/callback, as registered at the provider", r)
		}
	}
	if len(cfg.Key) < 16 {
		return nil, errors.New("OIDC: the flow key is too short")
	}
	if !containsFold(cfg.Scopes, gooidc.ScopeOpenID) {
		cfg.Scopes = append([]string{gooidc.ScopeOpenID}, cfg.Scopes...)
	}
	for p, d := range map[*string]string{&cfg.UsernameClaim: "preferred_username", &cfg.EmailClaim: "email",
		&cfg.NameClaim: "name", &cfg.GroupsClaim: "groups"} {
		if *p == "" {
			*p = d
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Provider{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}}, nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// discover reads the provider's metadata once it answers.
func (p *Provider) discover(ctx context.Context) (*gooidc.Provider, oauth2.Config, *gooidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.op == nil {
		op, err := gooidc.NewProvider(gooidc.ClientContext(ctx, p.client), p.cfg.Issuer)
		if err != nil {
			return nil, oauth2.Config{}, nil, fmt.Errorf("%w: discovery at %s: %v", ErrUnavailable, p.cfg.Issuer, err)
		}
		p.op, p.verifier = op, op.Verifier(&gooidc.Config{ClientID: p.cfg.ClientID, Now: p.cfg.Now})
		p.oauth = oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, Endpoint: op.Endpoint(),
			RedirectURL: p.cfg.RedirectURLs[0], Scopes: p.cfg.Scopes}
	}
	return p.op, p.oauth, p.verifier, nil
}

// flow is what the callback needs of the redirect: in the cookie.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
	Redirect string `json:"r"`           // the callback the provider was asked to send the browser to
	Next     string `json:"x,omitempty"` // a page to return to (the web UI's), "" for an API client
}

// Begin starts a sign-in for a browser that reached Depot at base
// (scheme://host): the provider's URL to send the browser to, and the
// flow cookie's value to set on it. The provider sends the browser back
// to the registered callback on base (the first one when none is), where
// the cookie goes. next, kept in the flow, is what Finish gives back: the
// page a browser asked for ("" when an API client began).
func (p *Provider) Begin(ctx context.Context, base, next string) (redirect, cookie string, err error) {
	_, oauth, _, err := p.discover(ctx)
	if err != nil {
		return "", "", err
	}
	oauth.RedirectURL = p.callbackFor(base)
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Expires: p.cfg.Now().Add(FlowTTL).Unix(),
		Redirect: oauth.RedirectURL, Next: next}
	return oauth.AuthCodeURL(f.State, gooidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), p.seal(f), nil
}

// callbackFor is the registered callback on base, else the first.
func (p *Provider) callbackFor(base string) string {
	if b, err := url.Parse(base); err == nil {
		for _, r := range p.cfg.RedirectURLs {
			if u, _ := url.Parse(r); u.Scheme == b.Scheme && strings.EqualFold(u.Host, b.Host) {
				return r
			}
		}
	}
	return p.cfg.RedirectURLs[0]
}

// Finish completes a sign-in from the callback's query and the flow
// cookie: the user as the provider vouches for it, and the flow's next
// (given whenever the cookie was the flow's, also with an error).
func (p *Provider) Finish(ctx context.Context, q url.Values, cookie string) (*auth.Identity, string, error) {
	f, ok := p.open(cookie)
	id, err := p.finish(ctx, q, f, ok)
	return id, f.Next, err
}

func (p *Provider) finish(ctx context.Context, q url.Values, f flow, ok bool) (*auth.Identity, error) {
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: the sign-in was not started here, or took longer than %v: start it again", ErrFlow, FlowTTL)
	case q.Get("error") != "":
		return nil, fmt.Errorf("%w: the provider answered %s: %s", ErrFlow, q.Get("error"), q.Get("error_description"))
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1:
		return nil, fmt.Errorf("%w: the state differs from the one sent", ErrFlow)
	case q.Get("code") == "":
		return nil, fmt.Errorf("%w: no code", ErrFlow)
	}
	op, oauth, verifier, err := p.discover(ctx)
	if err != nil {
		return nil, err
	}
	if f.Redirect != "" {
		oauth.RedirectURL = f.Redirect // the exchange names the callback the code was sent to
	}
	cctx := gooidc.ClientContext(ctx, p.client)
	tok, err := oauth.Exchange(cctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.Response == nil || re.Response.StatusCode < 500) {
			return nil, fmt.Errorf("%w: the provider refused the code: %v", ErrFlow, err)
		}
		return nil, fmt.Errorf("%w: exchanging the code: %v", ErrUnavailable, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: the provider sent no ID token", ErrFlow)
	}
	idt, err := verifier.Verify(cctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the ID token: %v", ErrFlow, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return nil, fmt.Errorf("%w: the ID token's nonce differs from the one sent", ErrFlow)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: the ID token's claims: %v", ErrFlow, err)
	}
	if claims[p.cfg.UsernameClaim] == nil || claims[p.cfg.EmailClaim] == nil || claims[p.cfg.GroupsClaim] == nil {
		// Many providers put these in userinfo only.
		if ui, err := op.UserInfo(cctx, oauth2.StaticTokenSource(tok)); err == nil {
			more := map[string]any{}
			if ui.Claims(&more) == nil && more["sub"] == idt.Subject {
				for k, v := range more {
					if claims[k] == nil {
						claims[k] = v
					}
				}
			}
		}
	}
	id := &auth.Identity{Source: meta.SourceOIDC, Email: str(claims[p.cfg.EmailClaim]), Name: str(claims[p.cfg.NameClaim]),
		Groups: strs(claims[p.cfg.GroupsClaim])}
	if id.Username = str(claims[p.cfg.UsernameClaim]); id.Username == "" {
		return nil, fmt.Errorf("%w: the provider gave no %q claim to name the user by", ErrFlow, p.cfg.UsernameClaim)
	}
	return id, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	if s, ok := v.(string); ok && s != "" {
		out = append(out, s)
	}
	return out
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *Provider) mac(b []byte) []byte {
	h := hmac.New(sha256.New, p.cfg.Key)
	h.Write([]byte("depot oidc flow\x00"))
	h.Write(b)
	return h.Sum(nil)
}

// seal is the flow's cookie value: its JSON and a MAC over it.
func (p *Provider) seal(f flow) string {
	b, _ := json.Marshal(f)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(p.mac(b))
}

// open checks a cookie value and its age.
func (p *Provider) open(v string) (flow, bool) {
	var f flow
	data, sig, ok := strings.Cut(v, ".")
	if !ok || len(v) > 2048 {
		return f, false
	}
	b, err1 := base64.RawURLEncoding.DecodeString(data)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, p.mac(b)) || json.Unmarshal(b, &f) != nil {
		return f, false
	}
	return f, p.cfg.Now().Unix() <= f.Expires && f.State != ""
}
