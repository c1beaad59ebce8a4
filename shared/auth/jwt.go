package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenKind distinguishes short-lived access tokens from refresh tokens so
// one can never be presented in place of the other.
type TokenKind string

const (
	AccessToken  TokenKind = "access"
	RefreshToken TokenKind = "refresh"
	// RegistryToken is what a registry token endpoint (docker's Bearer
	// flow) hands out: short-lived, no session; when it was obtained with
	// an API token it names that token, whose scopes still apply.
	RegistryToken TokenKind = "registry"
)

const (
	jwtIssuer = "depot"
	jwtAlg    = "HS256"

	// RFC 7518 §3.2: an HS256 key MUST be at least as long as the hash
	// output (256 bits). Shorter keys are refused rather than silently used.
	minJWTSecret = 32

	// Real tokens are a few hundred bytes; refuse to parse anything huge.
	maxJWTLen = 8 << 10
)

// Claims are the claims of a depot session JWT. RegisteredClaims carries
// Subject (user id), ID (random jti), IssuedAt, ExpiresAt and Issuer.
type Claims struct {
	jwt.RegisteredClaims
	Kind    TokenKind `json:"typ"`
	Session string    `json:"sid"`
	TokenID string    `json:"tid,omitempty"`
	// Registry tokens: the password version they derive from (when not
	// a session or API token) and what they grant.
	PwVersion string `json:"pwv,omitempty"`
	// Vouched marks a registry token an edge issued from a login session
	// an origin vouched for; only an edge (an Authenticator with Remote)
	// honours it, and only in tokens it signed itself.
	Vouched bool     `json:"vch,omitempty"`
	Access  []Access `json:"access,omitempty"`
}

// JWT issues and verifies HS256 session tokens.
type JWT struct {
	secret []byte
	now    func() time.Time
}

// NewJWT returns a JWT using secret (copied) and the clock now; nil means
// time.Now. The secret must be at least 32 bytes (see RandomSecret); a shorter
// one makes Issue and Parse fail.
func NewJWT(secret []byte, now func() time.Time) *JWT {
	if now == nil {
		now = time.Now
	}
	return &JWT{secret: append([]byte(nil), secret...), now: now}
}

// Issue signs a new token of the given kind for userID/sessionID that
// expires ttl from now. exp is the expiry as encoded in the token (whole
// seconds).
func (j *JWT) Issue(kind TokenKind, userID, sessionID string, ttl time.Duration) (token string, exp time.Time, err error) {
	return j.IssueFor(kind, userID, sessionID, "", ttl)
}

// IssueFor is Issue with the API token the credential derives from.
func (j *JWT) IssueFor(kind TokenKind, userID, sessionID, tokenID string, ttl time.Duration) (token string, exp time.Time, err error) {
	return j.sign(Claims{Kind: kind, Session: sessionID, TokenID: tokenID,
		RegisteredClaims: jwt.RegisteredClaims{Subject: userID}}, ttl)
}

// sign fills in the registered claims of c (issuer, id, times) and signs
// it; the caller sets the kind, subject and its own claims.
func (j *JWT) sign(c Claims, ttl time.Duration) (token string, exp time.Time, err error) {
	if err := j.checkSecret(); err != nil {
		return "", time.Time{}, err
	}
	if !c.Kind.valid() {
		return "", time.Time{}, fmt.Errorf("auth: unknown token kind %q", c.Kind)
	}
	if c.Subject == "" {
		return "", time.Time{}, errors.New("auth: token subject is empty")
	}
	if ttl <= 0 {
		return "", time.Time{}, errors.New("auth: token ttl must be positive")
	}
	now := j.now()
	c.Issuer = jwtIssuer
	c.ID = NewID()
	c.IssuedAt = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	token, err = jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(j.secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: signing token: %w", err)
	}
	return token, c.ExpiresAt.Time, nil
}

// Parse verifies token and returns its claims. The algorithm is pinned to
// HS256 (so "none", HS512 or RS256-with-the-secret-as-public-key tricks are
// refused), expiry is checked against j.now, the issuer must be "depot" and
// the kind must equal want.
func (j *JWT) Parse(token string, want TokenKind) (*Claims, error) {
	if err := j.checkSecret(); err != nil {
		return nil, err
	}
	if !want.valid() {
		return nil, fmt.Errorf("auth: unknown token kind %q", want)
	}
	if len(token) > maxJWTLen {
		return nil, errors.New("auth: invalid token: too long")
	}
	c := &Claims{}
	_, err := jwt.ParseWithClaims(token, c,
		func(t *jwt.Token) (any, error) {
			// Redundant with WithValidMethods; kept so the key is never
			// handed to another algorithm even if the options change.
			if t.Method != jwt.SigningMethodHS256 {
				return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
			}
			return j.secret, nil
		},
		jwt.WithValidMethods([]string{jwtAlg}),
		jwt.WithTimeFunc(j.now),
		jwt.WithIssuer(jwtIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithStrictDecoding(),
	)
	if err != nil {
		return nil, fmt.Errorf("auth: invalid token: %w", err)
	}
	if c.Kind != want {
		return nil, fmt.Errorf("auth: invalid token: kind %q, want %q", c.Kind, want)
	}
	if c.Subject == "" {
		return nil, errors.New("auth: invalid token: missing subject")
	}
	return c, nil
}

// Plausible reports whether token could be a JWT some depot node issued
// and still honours: its claims, read without checking the signature,
// name depot as issuer, an access or registry kind, a subject, and an
// expiry after now. A node that must ask another to verify a token (an
// edge) asks only about plausible ones.
func Plausible(token string, now time.Time) bool {
	if !LooksLikeJWT(token) {
		return false
	}
	c := &Claims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, c); err != nil {
		return false
	}
	return c.Issuer == jwtIssuer && (c.Kind == AccessToken || c.Kind == RegistryToken) && c.Subject != "" &&
		c.ExpiresAt != nil && c.ExpiresAt.After(now)
}

// LooksLikeJWT is a cheap syntactic check (three non-empty base64url parts
// separated by dots) used to route a bearer credential to JWT parsing rather
// than API-token lookup. It does not verify anything.
func LooksLikeJWT(s string) bool {
	if len(s) > maxJWTLen {
		return false
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || !isJWTSegment(p) {
			return false
		}
	}
	return true
}

func isJWTSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (k TokenKind) valid() bool { return k == AccessToken || k == RefreshToken || k == RegistryToken }

func (j *JWT) checkSecret() error {
	if len(j.secret) < minJWTSecret {
		return fmt.Errorf("auth: JWT secret must be at least %d bytes", minJWTSecret)
	}
	return nil
}
