package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// ErrBadCredentials means credentials were given and are not valid
// (unknown user, wrong password, expired or revoked token). The message
// deliberately does not say which.
var ErrBadCredentials = errors.New("invalid credentials")

// ErrPasswordChange refuses a registry token to an account whose initial
// password must still be changed.
var ErrPasswordChange = errors.New("the password must be changed before a registry token is issued")

// ErrUnverifiable means a token only an origin can verify was presented
// to an edge that cannot reach one: not a wrong credential, and not
// counted as a failure.
var ErrUnverifiable = errors.New("auth: no origin can be reached to verify this token; API tokens keep working")

// ErrPasswordUnverifiable means a password was presented to an edge that
// cannot reach an origin to check it (edges hold no password hashes):
// not a wrong password, and not counted as a failure.
var ErrPasswordUnverifiable = errors.New("auth: no origin can be reached to check this password; API tokens keep working")

// ErrDirectoryUnavailable means a password of a directory user (LDAP)
// could not be checked: the directory did not answer. Not a wrong
// password, and not counted as a failure.
var ErrDirectoryUnavailable = errors.New("auth: the directory (LDAP) cannot check this password now; API tokens and local accounts keep working")

// Identity is a user as a directory or an identity provider vouches for
// it (shared/auth/ldap, shared/auth/oidc).
type Identity struct {
	Source   string // meta.SourceLDAP, meta.SourceOIDC
	Username string
	Email    string
	Name     string   // the display name, "" when the directory has none
	Groups   []string // the directory's names of the user's groups
}

// PasswordDirectory checks passwords of users a directory keeps. Its
// errors: ErrBadCredentials (a wrong password, or no such user there) or
// ErrDirectoryUnavailable.
type PasswordDirectory interface {
	Authenticate(ctx context.Context, username, password string) (*Identity, error)
}

// ErrNotHere means an edge does not hold the user or the token a
// credential names: edges hold only the users who can act on their
// repositories (replication/feed), so an origin decides (the request goes
// there). Not counted as a failure here; the origin counts it.
var ErrNotHere = errors.New("auth: this node does not hold the user of this credential; an origin decides")

// Viewer is the read side of the metadata store.
type Viewer interface {
	View(func(*meta.Tx) error) error
}

// Authenticator turns presented credentials into a Principal. It only
// reads replicated state, so an edge can run it while the origin is away.
type Authenticator struct {
	Meta  Viewer
	JWT   *JWT
	Cache *CredCache // verified passwords, so Basic auth skips argon2 on a hit
	Now   func() time.Time
	// Hasher bounds concurrent argon2 runs; Guard throttles addresses and
	// usernames that fail too often. Nil disables either (unit tests).
	Hasher *Hasher
	Guard  *Guard
	// OnFailure is told of every failed credential check (the audit log).
	OnFailure func(ctx context.Context, f Failure)
	// Remote vouches for a JWT this process cannot verify: an edge holds
	// no secret an origin's tokens are signed with, so it asks an origin
	// (which answers with Vouch). The claims it returns were checked
	// there, the login session included; the edge still checks the user,
	// and the API token or password a registry token derives from,
	// against its replica. Nil: such tokens are refused.
	Remote func(ctx context.Context, tok string) (*Claims, error)
	// RemotePassword checks a password with an origin: an edge holds no
	// password hashes (EdgeUser), so it asks, and remembers a yes in
	// Cache under a keyed digest for as long as the user's password stays
	// the same (the replicated marker). An error (no origin reachable) is
	// ErrPasswordUnverifiable. Nil: passwords are checked here.
	RemotePassword func(ctx context.Context, user, pass, remote string) (bool, error)
	// Partial marks a replica that holds only some users (an edge): a
	// credential whose user or token it does not hold is ErrNotHere
	// rather than a wrong one.
	Partial bool
	// Directory checks the passwords of directory users, and of names no
	// local user has; Provision then creates or updates the local user
	// from what the directory said (the application layer commits it).
	// Origins only: an edge asks an origin (RemotePassword).
	Directory PasswordDirectory
	Provision func(ctx context.Context, id *Identity) (*meta.User, error)

	memoOnce sync.Once
	memo     credentialMemos
}

// absent is the error for a credential whose record lookup failed with
// err: ErrNotHere when the record may live only at the origins.
func (a *Authenticator) absent(err error) error {
	if a.Partial && errors.Is(err, meta.ErrNotFound) {
		return ErrNotHere
	}
	return ErrBadCredentials
}

// EdgeUser is a user record as an edge node receives it: without the
// email and the password hash, which never leave the origins (a stolen
// edge disk or credential must not allow cracking passwords offline).
// The hash becomes a marker that changes with it (a digest of the whole
// argon2 string, salt included, so nothing to test guesses against), so
// what an edge remembers of a password is forgotten when it changes.
// It reports whether it changed u.
func EdgeUser(u *meta.User) bool {
	changed := u.Email != ""
	u.Email = ""
	if u.PasswordHash != "" && !strings.HasPrefix(u.PasswordHash, edgeMarker) {
		u.PasswordHash, changed = edgeMarker+passwordVersion(u.PasswordHash), true
	}
	return changed
}

const edgeMarker = "edge:"

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Authenticate checks an Authorization header value presented from remote:
// "Bearer <jwt or API token>", "Token <...>", "Basic <b64 user:pass>", or a
// bare API token (cargo and gem send the token as is). An empty header is
// anonymous: (nil, nil). Failures are counted and reported; a password
// check for an address or username past its failure limit is refused
// with a *ThrottledError before any hashing.
func (a *Authenticator) Authenticate(ctx context.Context, header, remote string) (*Principal, error) {
	h := strings.TrimSpace(header)
	if h == "" {
		return nil, nil
	}
	f := Failure{Remote: remote, Scheme: "unknown"}
	p, err := (*Principal)(nil), ErrBadCredentials
	scheme, rest, _ := strings.Cut(h, " ")
	switch scheme = strings.ToLower(scheme); {
	case len(h) > maxHeaderBytes:
		f.Scheme = "oversized"
	case scheme == "bearer" || scheme == "token":
		f.Scheme = scheme
		p, err = a.Bearer(ctx, strings.TrimSpace(rest))
	case scheme == "basic":
		f.Scheme = scheme
		raw, derr := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
		if user, pass, ok := strings.Cut(string(raw), ":"); derr == nil && ok {
			return a.Basic(ctx, user, pass, remote) // counts its failures with their username
		}
	case strings.HasPrefix(h, TokenPrefix):
		f.Scheme = "token"
		p, err = a.APIToken(h)
	}
	if err != nil {
		return nil, a.fail(ctx, f, err)
	}
	return p, nil
}

// fail counts and reports a failed check and returns err.
func (a *Authenticator) fail(ctx context.Context, f Failure, err error) error {
	switch {
	case errors.Is(err, ErrNotHere):
		return err // the origin it goes to counts it
	case errors.Is(err, ErrBusy):
		f.Reason = "busy"
	case errors.Is(err, ErrUnverifiable), errors.Is(err, ErrPasswordUnverifiable), errors.Is(err, ErrDirectoryUnavailable):
		f.Reason = "unverifiable"
	case errors.As(err, new(*ThrottledError)):
		f.Reason = "throttled"
	default:
		f.Reason = "bad_credentials"
		a.Guard.Fail(ctx, f.Remote, f.Username)
	}
	if a.OnFailure != nil {
		a.OnFailure(ctx, f)
	}
	return err
}

// Bearer authenticates an access JWT, a registry token or an API token.
func (a *Authenticator) Bearer(ctx context.Context, tok string) (*Principal, error) {
	if strings.HasPrefix(tok, TokenPrefix) {
		return a.APIToken(tok)
	}
	if strings.HasPrefix(tok, EdgeTokenPrefix) {
		return a.EdgeToken(tok)
	}
	if a.JWT == nil || !LooksLikeJWT(tok) {
		return nil, ErrBadCredentials
	}
	if c, err := a.JWT.Parse(tok, AccessToken); err == nil {
		return a.session(c, CredSession, false)
	}
	if c, err := a.JWT.Parse(tok, RegistryToken); err == nil {
		return a.registry(c, false)
	}
	if a.Remote == nil {
		return nil, ErrBadCredentials
	}
	c, err := a.Remote(ctx, tok)
	switch {
	case err != nil:
		return nil, err
	case c.Kind == AccessToken:
		return a.session(c, CredSession, true)
	case c.Kind == RegistryToken:
		return a.registry(c, true)
	}
	return nil, ErrBadCredentials
}

// Vouch verifies a JWT for an edge that cannot (see Remote): an access or
// registry token signed here, unexpired, whose login session, if it has
// one, is still active. The claims are what the edge needs to resolve it.
func (a *Authenticator) Vouch(tok string) (*Claims, error) {
	if a.JWT == nil || !LooksLikeJWT(tok) {
		return nil, ErrBadCredentials
	}
	c, err := a.JWT.Parse(tok, AccessToken)
	if err != nil {
		if c, err = a.JWT.Parse(tok, RegistryToken); err != nil {
			return nil, ErrBadCredentials
		}
	}
	if c.Session != "" {
		if _, err := a.session(c, CredSession, false); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// registry resolves a registry token. It lives only as long as the
// credential it came from: the session, the API token (and its scopes), or
// the password it was issued for.
func (a *Authenticator) registry(c *Claims, vouched bool) (*Principal, error) {
	if c.Subject == anonymousSubject {
		return nil, nil
	}
	if len(c.Audience) != 1 {
		return nil, ErrBadCredentials
	}
	var p *Principal
	var err error
	switch {
	case c.Session != "":
		p, err = a.session(c, CredRegistry, vouched || (c.Vouched && a.Remote != nil))
	case c.TokenID != "":
		err = a.Meta.View(func(tx *meta.Tx) error {
			t, err := tx.TokenByID(c.TokenID)
			if err != nil {
				return a.absent(err)
			}
			if t.UserID != c.Subject {
				return ErrBadCredentials
			}
			p, err = a.tokenPrincipal(tx, t)
			return err
		})
	case c.PwVersion != "":
		err = a.Meta.View(func(tx *meta.Tx) error {
			u, err := tx.User(c.Subject)
			if err != nil {
				return a.absent(err)
			}
			if u.Disabled || subtle.ConstantTimeCompare([]byte(passwordVersion(credMarker(u))), []byte(c.PwVersion)) != 1 {
				return ErrBadCredentials
			}
			p = principalOf(u)
			return nil
		})
	default:
		return nil, ErrBadCredentials
	}
	if err != nil {
		if errors.Is(err, ErrNotHere) {
			return nil, err
		}
		return nil, ErrBadCredentials
	}
	if p.MustChangePassword {
		return nil, ErrBadCredentials
	}
	p.Via, p.Audience, p.Access = CredRegistry, c.Audience[0], c.Access
	return p, nil
}

// anonymousSubject marks a registry token handed to nobody in particular
// (docker clients want a token even for anonymous pulls); user ids are hex
// and never look like this.
const anonymousSubject = "~anonymous"

// RegistryGrant is what a registry token carries: the format it is valid
// on and the access granted there.
type RegistryGrant struct {
	Audience string
	Access   []Access
}

// IssueRegistryToken hands p a short-lived registry token for g, tied to
// the credential p presented. A registry token never buys its successor
// (it would outlive the logout or password change that ended its source),
// and an account that must change its password gets none.
func (a *Authenticator) IssueRegistryToken(p *Principal, g RegistryGrant, ttl time.Duration) (string, time.Time, error) {
	c := Claims{Kind: RegistryToken, Access: g.Access}
	c.Audience = []string{g.Audience}
	switch {
	case p.Anonymous():
		c.Subject = anonymousSubject
	case p.Via == CredRegistry:
		return "", time.Time{}, ErrBadCredentials
	case p.MustChangePassword:
		return "", time.Time{}, ErrPasswordChange
	case p.Via == CredSession:
		c.Subject, c.Session, c.Vouched = p.UserID, p.SessionID, p.vouched
	case p.Via == CredAPIToken:
		c.Subject, c.TokenID = p.UserID, p.TokenID
	case p.Via == CredPassword && p.pwVersion != "":
		c.Subject, c.PwVersion = p.UserID, p.pwVersion
	default:
		return "", time.Time{}, ErrBadCredentials
	}
	return a.JWT.sign(c, ttl)
}

// passwordVersion fingerprints a password hash; a new password (new salt)
// gives a new version.
func passwordVersion(hash string) string {
	if v, ok := strings.CutPrefix(hash, edgeMarker); ok {
		return v // an edge's record of the hash is its version (EdgeUser)
	}
	sum := sha256.Sum256([]byte(hash))
	return hex.EncodeToString(sum[:12])
}

// session checks that the session a JWT belongs to is still active and
// returns its user. vouched: an origin checked the session when it
// vouched for the token (at an edge).
//
// A vouched session (an origin said it was active when the edge asked)
// is checked against the replica too when the replica has it: a session
// ended since (logout, a password change, a revoked refresh token)
// reaches the edge with the change feed, and its tokens stop there as
// they stop at the origins. One the replica has not heard of yet is the
// origin's word.
func (a *Authenticator) session(c *Claims, via Credential, vouched bool) (*Principal, error) {
	return recall(a, a.memos().sessions, sessionKey{c.Session, c.Subject, via, vouched}, func(tx *meta.Tx) (credential, error) {
		s, err := tx.Session(c.Session)
		switch {
		case err == nil && (s.UserID != c.Subject || !s.Active(a.now())):
			return credential{}, ErrBadCredentials
		case err != nil && !(vouched && errors.Is(err, meta.ErrNotFound)):
			return credential{}, ErrBadCredentials
		}
		u, err := tx.User(c.Subject)
		if err != nil {
			return credential{}, a.absent(err)
		}
		if u.Disabled {
			return credential{}, ErrBadCredentials
		}
		p := principalOf(u)
		p.SessionID, p.Via, p.vouched = c.Session, via, vouched
		m := credential{p: *p}
		if s != nil {
			m.expires = &s.ExpiresAt
		}
		return m, nil
	})
}

// Refresh validates a refresh JWT and returns its principal (with the
// session id) for issuing a new access token.
func (a *Authenticator) Refresh(tok string) (*Principal, error) {
	if a.JWT == nil || !LooksLikeJWT(tok) {
		return nil, ErrBadCredentials
	}
	c, err := a.JWT.Parse(tok, RefreshToken)
	if err != nil {
		return nil, ErrBadCredentials
	}
	return a.session(c, CredSession, false)
}

// APIToken authenticates an API token secret.
func (a *Authenticator) APIToken(secret string) (*Principal, error) {
	if len(secret) > MaxSecretBytes {
		return nil, ErrBadCredentials
	}
	hash := HashAPIToken(secret)
	return recall(a, a.memos().tokens, hash, func(tx *meta.Tx) (credential, error) {
		t, err := tx.TokenByHash(hash)
		if err != nil {
			return credential{}, a.absent(err)
		}
		p, err := a.tokenPrincipal(tx, t)
		if err != nil {
			return credential{}, err
		}
		return credential{p: *p, expires: t.ExpiresAt}, nil
	})
}

// EdgeToken resolves an edge node's credential to a node principal; a
// deregistered node's credential fails at once.
func (a *Authenticator) EdgeToken(secret string) (*Principal, error) {
	if len(secret) > MaxSecretBytes {
		return nil, ErrBadCredentials
	}
	var p *Principal
	err := a.Meta.View(func(tx *meta.Tx) error {
		e, err := tx.EdgeByTokenHash(HashAPIToken(secret))
		if errors.Is(err, meta.ErrNotFound) {
			return ErrBadCredentials
		}
		if err == nil {
			p = &Principal{Via: CredEdge, EdgeID: e.ID}
		}
		return err
	})
	return p, err
}

func (a *Authenticator) tokenPrincipal(tx *meta.Tx, t *meta.Token) (*Principal, error) {
	if t.Expired(a.now()) {
		return nil, ErrBadCredentials
	}
	u, err := tx.User(t.UserID)
	if err != nil {
		return nil, a.absent(err)
	}
	if u.Disabled {
		return nil, ErrBadCredentials
	}
	scopes, err := ParseScopes(t.Scopes)
	if err != nil {
		return nil, ErrBadCredentials
	}
	p := principalOf(u)
	p.TokenID, p.Scopes, p.Via = t.ID, scopes, CredAPIToken
	return p, nil
}

// Basic authenticates a username with a password or an API token (package
// clients put tokens in the password field; the username must then be the
// token's owner, or anything for clients like twine that send __token__).
func (a *Authenticator) Basic(ctx context.Context, user, pass, remote string) (*Principal, error) {
	if strings.HasPrefix(pass, TokenPrefix) {
		p, err := a.APIToken(pass)
		if err == nil && !strings.EqualFold(user, p.Username) && user != "__token__" && user != "" {
			err = ErrBadCredentials
		}
		if err != nil {
			return nil, a.fail(ctx, Failure{Remote: remote, Username: user, Scheme: "basic"}, err)
		}
		return p, nil
	}
	return a.password(ctx, user, pass, remote, "basic")
}

// Login verifies a username and password for POST /auth/login.
func (a *Authenticator) Login(ctx context.Context, user, pass, remote string) (*Principal, error) {
	return a.password(ctx, user, pass, remote, "login")
}

// password verifies a username and password, unless the address or the
// username has spent its failure budget. A verified pair is cached with the
// hash it matched, so a password change invalidates the entry and a cached
// credential costs no argon2 run. Otherwise the check waits for a hashing
// slot and checks the budget again there (a burst of bad guesses all
// arrives before the first of them has failed).
func (a *Authenticator) password(ctx context.Context, user, pass, remote, scheme string) (*Principal, error) {
	f := Failure{Remote: remote, Username: user, Scheme: scheme}
	if user == "" || len(user) > MaxUsernameBytes || len(pass) > MaxSecretBytes {
		return nil, a.fail(ctx, f, ErrBadCredentials)
	}
	var u *meta.User
	err := a.Meta.View(func(tx *meta.Tx) error {
		var err error
		u, err = tx.UserByName(user)
		return err
	})
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return nil, err // the store failed: that is not a wrong password
	}
	// The limits come first, even before the cache: a throttled address
	// must not keep guessing against the cache of recent sign-ins.
	if err := a.Guard.Check(ctx, remote, user); err != nil {
		return nil, a.fail(ctx, f, err)
	}
	if a.Directory != nil && a.RemotePassword == nil && (u == nil || u.Source == meta.SourceLDAP) {
		return a.directoryPassword(ctx, u, pass, f)
	}
	hash := dummyHash
	if u != nil && u.PasswordHash != "" && !u.Disabled {
		hash = u.PasswordHash
	}
	if u != nil && credMarker(u) != "" && !u.Disabled {
		if h, ok := a.Cache.Get(u.ID + "\x00" + pass); ok && h == credMarker(u) {
			return a.passwordPrincipal(u), nil
		}
	}
	if a.RemotePassword != nil {
		return a.remotePassword(ctx, u, user, pass, remote, f)
	}
	release, err := a.Hasher.acquire(ctx, func() bool { return a.Guard.Suspect(remote) })
	if err != nil {
		return nil, a.fail(ctx, f, err)
	}
	if err := a.Guard.Check(ctx, remote, user); err != nil {
		release()
		return nil, a.fail(ctx, f, err)
	}
	// An unknown user costs the time a real check does, so timing does
	// not reveal which usernames exist.
	ok := VerifyPassword(hash, pass)
	release()
	if !ok || hash == dummyHash {
		return nil, a.fail(ctx, f, ErrBadCredentials)
	}
	a.Cache.Put(u.ID+"\x00"+pass, hash)
	return a.passwordPrincipal(u), nil
}

// directoryPassword checks the password of a directory user, or of a
// name no local user has, with the directory (a verdict is cached as a
// local one is, for Basic credentials), and creates or updates the local
// user from its answer.
func (a *Authenticator) directoryPassword(ctx context.Context, u *meta.User, pass string, f Failure) (*Principal, error) {
	// A sign-in asks the directory every time, so what it says of the
	// user (groups, role) applies from that session on; a client's Basic
	// credentials are checked again once the cached verdict expires.
	if u != nil && f.Scheme != "login" && !u.Disabled {
		if h, ok := a.Cache.Get(u.ID + "\x00" + pass); ok && h == credMarker(u) {
			return a.passwordPrincipal(u), nil
		}
	}
	id, err := a.Directory.Authenticate(ctx, f.Username, pass)
	if err != nil {
		if !errors.Is(err, ErrDirectoryUnavailable) {
			err = ErrBadCredentials
		}
		return nil, a.fail(ctx, f, err)
	}
	nu, err := a.Provision(ctx, id)
	if err != nil {
		return nil, err
	}
	if nu.Disabled {
		return nil, a.fail(ctx, f, ErrBadCredentials) // by an administrator
	}
	a.Cache.Put(nu.ID+"\x00"+pass, credMarker(nu))
	return a.passwordPrincipal(nu), nil
}

// credMarker is what a cached password verdict is tied to: the password
// hash of a local user (a change forgets the verdict), a fixed marker of
// a directory user (whose password changes in the directory: the cache's
// lifetime bounds how long an old one is taken).
func credMarker(u *meta.User) string {
	if u.PasswordHash != "" || u.Source != meta.SourceLDAP {
		return u.PasswordHash
	}
	return "directory:" + u.Source + ":" + u.ID
}

// remotePassword has an origin check a password (see RemotePassword).
func (a *Authenticator) remotePassword(ctx context.Context, u *meta.User, user, pass, remote string, f Failure) (*Principal, error) {
	if u == nil && a.Partial {
		return nil, a.fail(ctx, f, ErrNotHere)
	}
	if u == nil || credMarker(u) == "" {
		return nil, a.fail(ctx, f, ErrBadCredentials)
	}
	ok, err := a.RemotePassword(ctx, user, pass, remote)
	switch {
	case err != nil:
		return nil, a.fail(ctx, f, ErrPasswordUnverifiable)
	case !ok:
		return nil, a.fail(ctx, f, ErrBadCredentials)
	}
	a.Cache.Put(u.ID+"\x00"+pass, credMarker(u))
	return a.passwordPrincipal(u), nil
}

func (a *Authenticator) passwordPrincipal(u *meta.User) *Principal {
	p := principalOf(u)
	p.Via, p.pwVersion = CredPassword, passwordVersion(credMarker(u))
	return p
}

// dummyHash is a valid argon2id encoding of a random password.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$DlOzkKY62uF3JHxpEaBi7Q$uDB0XczvSas2U/iVsrFcm5rrKAAoz+HtLfLZx0FKn/8"

func principalOf(u *meta.User) *Principal {
	return &Principal{UserID: u.ID, Username: u.Username, Role: u.Role, MustChangePassword: u.MustChangePassword}
}
