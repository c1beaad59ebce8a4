package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testClock is a settable clock injected into JWT and CredCache.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestClock() *testClock {
	return &testClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func testSecret() []byte { return []byte("0123456789abcdef0123456789abcdef") }

func TestJWTIssueParse(t *testing.T) {
	clk := newTestClock()
	j := NewJWT(testSecret(), clk.now)
	tok, exp, err := j.Issue(AccessToken, "user-1", "sess-1", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(clk.t.Add(15 * time.Minute)) {
		t.Errorf("exp = %v, want %v", exp, clk.t.Add(15*time.Minute))
	}
	if !LooksLikeJWT(tok) {
		t.Errorf("issued token %q does not look like a JWT", tok)
	}
	c, err := j.Parse(tok, AccessToken)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Subject != "user-1" || c.Session != "sess-1" || c.Kind != AccessToken || c.Issuer != "depot" {
		t.Errorf("claims = %+v", c)
	}
	if len(c.ID) != 32 {
		t.Errorf("jti %q is not a 32-char id", c.ID)
	}
	if !c.IssuedAt.Time.Equal(clk.t) || !c.ExpiresAt.Time.Equal(exp) {
		t.Errorf("iat/exp = %v/%v", c.IssuedAt, c.ExpiresAt)
	}
	tok2, _, _ := j.Issue(AccessToken, "user-1", "sess-1", 15*time.Minute)
	c2, err := j.Parse(tok2, AccessToken)
	if err != nil || c2.ID == c.ID {
		t.Errorf("second token: err=%v, jti reused=%v", err, c2 != nil && c2.ID == c.ID)
	}

	// The header must say HS256 and JWT.
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]any
	if err := json.Unmarshal(hdr, &h); err != nil || h["alg"] != "HS256" {
		t.Errorf("header = %s", hdr)
	}
}

func TestJWTExpiry(t *testing.T) {
	clk := newTestClock()
	j := NewJWT(testSecret(), clk.now)
	tok, _, err := j.Issue(RefreshToken, "u", "s", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour - time.Second)
	if _, err := j.Parse(tok, RefreshToken); err != nil {
		t.Fatalf("token rejected 1s before expiry: %v", err)
	}
	clk.advance(time.Second)
	_, err = j.Parse(tok, RefreshToken)
	if !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("at expiry: err = %v, want ErrTokenExpired", err)
	}
}

func TestJWTIssuedInFutureRejected(t *testing.T) {
	clk := newTestClock()
	future := NewJWT(testSecret(), func() time.Time { return clk.t.Add(time.Hour) })
	tok, _, err := future.Issue(AccessToken, "u", "s", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewJWT(testSecret(), clk.now).Parse(tok, AccessToken); err == nil {
		t.Fatal("token with iat in the future accepted")
	}
}

func TestJWTWrongKind(t *testing.T) {
	j := NewJWT(testSecret(), nil)
	acc, _, _ := j.Issue(AccessToken, "u", "s", time.Minute)
	ref, _, _ := j.Issue(RefreshToken, "u", "s", time.Minute)
	if _, err := j.Parse(acc, RefreshToken); err == nil {
		t.Error("access token accepted as refresh token")
	}
	if _, err := j.Parse(ref, AccessToken); err == nil {
		t.Error("refresh token accepted as access token")
	}
	if _, err := j.Parse(acc, TokenKind("")); err == nil {
		t.Error("empty wanted kind accepted")
	}
}

func TestJWTWrongSecret(t *testing.T) {
	a := NewJWT(testSecret(), nil)
	b := NewJWT([]byte("fedcba9876543210fedcba9876543210"), nil)
	tok, _, _ := a.Issue(AccessToken, "u", "s", time.Minute)
	if _, err := b.Parse(tok, AccessToken); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Fatalf("err = %v, want ErrTokenSignatureInvalid", err)
	}
}

func TestJWTSecretCopiedAndLength(t *testing.T) {
	s := testSecret()
	j := NewJWT(s, nil)
	tok, _, _ := j.Issue(AccessToken, "u", "s", time.Minute)
	s[0] ^= 0xff // caller mutating its slice must not affect the issuer
	if _, err := j.Parse(tok, AccessToken); err != nil {
		t.Fatalf("secret not copied: %v", err)
	}
	short := NewJWT([]byte("too-short"), nil)
	if _, _, err := short.Issue(AccessToken, "u", "s", time.Minute); err == nil {
		t.Error("Issue with a 9-byte secret succeeded")
	}
	if _, err := short.Parse(tok, AccessToken); err == nil {
		t.Error("Parse with a 9-byte secret succeeded")
	}
	if len(RandomSecret()) < minJWTSecret {
		t.Error("RandomSecret is shorter than the JWT minimum")
	}
}

func TestJWTIssueRejectsBadInput(t *testing.T) {
	j := NewJWT(testSecret(), nil)
	if _, _, err := j.Issue("session", "u", "s", time.Minute); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, _, err := j.Issue(AccessToken, "", "s", time.Minute); err == nil {
		t.Error("empty user id accepted")
	}
	if _, _, err := j.Issue(AccessToken, "u", "s", 0); err == nil {
		t.Error("zero ttl accepted")
	}
}

// forged returns claims identical to what Issue would produce, for signing
// with other algorithms or keys.
func forged(clk *testClock) Claims {
	return Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    "depot",
			Subject:   "admin-user",
			ID:        NewID(),
			IssuedAt:  jwt.NewNumericDate(clk.t),
			ExpiresAt: jwt.NewNumericDate(clk.t.Add(time.Hour)),
		},
		Kind:    AccessToken,
		Session: "s",
	}
}

func TestJWTRejectsOtherAlgorithms(t *testing.T) {
	clk := newTestClock()
	j := NewJWT(testSecret(), clk.now)
	c := forged(clk)

	// Sanity: the same claims signed properly are accepted, so the
	// rejections below are due to the algorithm alone.
	good, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Parse(good, AccessToken); err != nil {
		t.Fatalf("control token rejected: %v", err)
	}

	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, c).SignedString(testSecret())
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rs256, err := jwt.NewWithClaims(jwt.SigningMethodRS256, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-built "alg":"none" with the HS256 signature still attached.
	noneWithSig := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) +
		good[strings.Index(good, "."):]

	for name, tok := range map[string]string{
		"none": none, "none-with-sig": noneWithSig, "HS512": hs512, "RS256": rs256,
	} {
		if _, err := j.Parse(tok, AccessToken); err == nil {
			t.Errorf("%s token accepted", name)
		}
	}
}

func TestJWTRejectsTamperedPayload(t *testing.T) {
	clk := newTestClock()
	j := NewJWT(testSecret(), clk.now)
	tok, _, err := j.Issue(AccessToken, "alice", "s", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(payload), `"sub":"alice"`, `"sub":"admin"`, 1)
	if evil == string(payload) {
		t.Fatalf("payload %s has no sub to tamper with", payload)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(evil))
	if _, err := j.Parse(strings.Join(parts, "."), AccessToken); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Fatalf("tampered payload: err = %v, want ErrTokenSignatureInvalid", err)
	}
}

func TestJWTRejectsBadClaims(t *testing.T) {
	clk := newTestClock()
	j := NewJWT(testSecret(), clk.now)
	sign := func(c Claims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	wrongIss := forged(clk)
	wrongIss.Issuer = "someone-else"
	noExp := forged(clk)
	noExp.ExpiresAt = nil
	noSub := forged(clk)
	noSub.Subject = ""
	for name, tok := range map[string]string{
		"wrong issuer": sign(wrongIss),
		"no exp":       sign(noExp),
		"no subject":   sign(noSub),
		"garbage":      "not.a.jwt",
		"empty":        "",
		"huge":         strings.Repeat("a", maxJWTLen+1),
	} {
		if _, err := j.Parse(tok, AccessToken); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	cases := map[string]bool{
		"aaa.bbb.ccc":                    true,
		"eyJhbGciOi.eyJzdWIi.Sf-l_Kx9":   true,
		"aaa.bbb.":                       false,
		"aaa..ccc":                       false,
		"aaa.bbb":                        false,
		"a.b.c.d":                        false,
		"":                               false,
		"dpt_abcdefghijklmnopqrstuvwxyz": false,
		"aa+.bbb.ccc":                    false,
		"aaa.b/b.ccc":                    false,
		"aaa.bbb.cc=":                    false,
		"aaa.bbb.ccc ":                   false,
	}
	for s, want := range cases {
		if got := LooksLikeJWT(s); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", s, got, want)
		}
	}
}
