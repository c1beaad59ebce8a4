package meta

import (
	"bytes"
	"sort"
	"time"
)

// The API token and login session kinds and their commands.
const (
	KindToken        Kind    = 2
	KindSession      Kind    = 3
	SpaceTokenHashes Space   = 25 // hash -> token id
	CmdTokenCreate   CmdType = 4
	CmdTokenRevoke   CmdType = 5
	CmdSessionCreate CmdType = 6
	CmdSessionRevoke CmdType = 7
	CmdSessionPurge  CmdType = 17
)

var (
	bUserTokens   = []byte("user_tokens") // user \0 token id -> ""
	bUserSessions = []byte("user_sess")   // user \0 session id -> ""
	bSessExpiry   = []byte("sess_expiry") // expiry (unix ns, big-endian), session id -> ""
)

func init() {
	declareKind(KindToken, kindDecl{Name: "tokens", Bucket: "tokens", Index: indexToken, Derived: [][]byte{bUserTokens},
		Lookups: []lookupDecl{{SpaceTokenHashes, "token hashes", "token_hashes"}}})
	declareKind(KindSession, kindDecl{Name: "sessions", Bucket: "sessions", Index: indexSession, Derived: [][]byte{bUserSessions, bSessExpiry}})
	declareCommand(CmdTokenCreate, func() Command { return new(TokenCreate) })
	declareCommand(CmdTokenRevoke, func() Command { return new(TokenRevoke) })
	declareCommand(CmdSessionCreate, func() Command { return new(SessionCreate) })
	declareCommand(CmdSessionRevoke, func() Command { return new(SessionRevoke) })
	declareCommand(CmdSessionPurge, func() Command { return new(SessionPurge) })
}

// Token is an API token. Only the hash of its secret is kept.
type Token struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Hash      string     `json:"hash"`
	Hint      string     `json:"hint"` // the first characters of the secret, to recognise it in a list
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// Session is one login: its access and refresh tokens carry its id, and
// revoking it (logout) stops both.
type Session struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Active reports whether the session can still authenticate at now.
func (s *Session) Active(now time.Time) bool {
	return s.RevokedAt == nil && now.Before(s.ExpiresAt)
}

// TokenCreate stores a new API token (its hash).
type TokenCreate struct {
	Token Token `json:"token"`
}

// TokenRevoke deletes a token of a user.
type TokenRevoke struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
}

// SessionCreate records a login.
type SessionCreate struct {
	Session Session `json:"session"`
}

// SessionRevoke ends a session (logout).
type SessionRevoke struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// SessionPurge drops sessions that expired before Before.
type SessionPurge struct {
	Before time.Time `json:"before"`
}

func (*TokenCreate) Type() CmdType   { return CmdTokenCreate }
func (*TokenRevoke) Type() CmdType   { return CmdTokenRevoke }
func (*SessionCreate) Type() CmdType { return CmdSessionCreate }
func (*SessionRevoke) Type() CmdType { return CmdSessionRevoke }
func (*SessionPurge) Type() CmdType  { return CmdSessionPurge }
func (*TokenCreate) Scope() string   { return "" }
func (*TokenRevoke) Scope() string   { return "" }
func (*SessionCreate) Scope() string { return "" }
func (*SessionRevoke) Scope() string { return "" }
func (*SessionPurge) Scope() string  { return "" }

func (c *TokenCreate) apply(tx *Tx) error {
	t := c.Token
	if _, err := tx.User(t.UserID); err != nil {
		return err
	}
	if t.ID == "" || t.Hash == "" {
		return Invalidf("token id and hash required")
	}
	if id, _ := tx.lookup(SpaceTokenHashes, t.Hash); id != nil || tx.exists(KindToken, t.ID) {
		return Conflictf("token exists")
	}
	return tx.putRec(KindToken, t.ID, t)
}

func (c *TokenRevoke) apply(tx *Tx) error {
	t, err := tx.TokenByID(c.ID)
	if err != nil || t.UserID != c.UserID {
		return NotFoundf("token %s", c.ID)
	}
	return tx.delRec(KindToken, t.ID)
}

func (c *SessionCreate) apply(tx *Tx) error {
	if _, err := tx.User(c.Session.UserID); err != nil {
		return err
	}
	if c.Session.ID == "" {
		return Invalidf("session id required")
	}
	if tx.exists(KindSession, c.Session.ID) {
		return Conflictf("session exists")
	}
	return tx.putRec(KindSession, c.Session.ID, c.Session)
}

func (c *SessionRevoke) apply(tx *Tx) error {
	s, err := tx.Session(c.ID)
	if err != nil {
		return err
	}
	if s.RevokedAt != nil {
		return nil
	}
	at := c.At
	s.RevokedAt = &at
	return tx.putRec(KindSession, s.ID, s)
}

func (c *SessionPurge) apply(tx *Tx) error {
	// The expiry index, in expiry order: only the expired are visited.
	var expired []string
	end := expiryKey(c.Before, "")
	cur := tx.bucket(bSessExpiry).Cursor()
	for k, _ := cur.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = cur.Next() {
		expired = append(expired, string(k[8:]))
	}
	return tx.delAll(KindSession, expired)
}

// expiryKey orders sessions by expiry (times before 1970 first, after
// 2262 last), then id.
func expiryKey(t time.Time, id string) []byte {
	var ns uint64
	switch {
	case t.Unix() <= 0:
	case t.Year() > 2261:
		ns = 1<<64 - 1
	default:
		ns = uint64(t.UnixNano())
	}
	return append(u64(ns), id...)
}

// buildSessExpiry indexes the sessions of a store written before the
// expiry index.
func buildSessExpiry(tx *Tx) error {
	var keys [][]byte
	err := tx.scan(Space(KindSession), "", func(id string, raw []byte) error {
		_, s, err := decodePair[Session](nil, raw)
		if err == nil {
			keys = append(keys, expiryKey(s.ExpiresAt, id))
		}
		return err
	})
	if err != nil {
		return err
	}
	return putInOrder(tx.bucket(bSessExpiry), keys)
}

func indexToken(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Token](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.space(SpaceTokenHashes).Delete([]byte(o.Hash)); err != nil {
			return err
		}
		if err := tx.delKey(bUserTokens, key(o.UserID, id)); err != nil {
			return err
		}
	}
	if n != nil {
		if err := tx.setIndexEntry(SpaceTokenHashes, n.Hash, []byte(id)); err != nil {
			return err
		}
		return tx.setKey(bUserTokens, key(n.UserID, id))
	}
	return nil
}

func indexSession(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Session](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.delKey(bUserSessions, key(o.UserID, id)); err != nil {
			return err
		}
		if err := tx.bucket(bSessExpiry).Delete(expiryKey(o.ExpiresAt, id)); err != nil {
			return err
		}
	}
	if n != nil {
		if err := tx.bucket(bSessExpiry).Put(expiryKey(n.ExpiresAt, id), []byte{}); err != nil {
			return err
		}
		return tx.setKey(bUserSessions, key(n.UserID, id))
	}
	return nil
}

// TokenByHash returns the token whose secret hashes to hash.
func (tx *Tx) TokenByHash(hash string) (*Token, error) {
	id, _ := tx.lookup(SpaceTokenHashes, hash)
	if id == nil {
		return nil, NotFoundf("token")
	}
	return tx.TokenByID(string(id))
}

// TokenByID returns a token by id.
func (tx *Tx) TokenByID(id string) (*Token, error) { return getRec[Token](tx, KindToken, id, "token") }

// TokensOf lists a user's tokens, oldest first.
func (tx *Tx) TokensOf(userID string) ([]Token, error) {
	var out []Token
	for _, id := range tx.prefixKeys(bUserTokens, key(userID, "")) {
		t, err := tx.TokenByID(id)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Credentials lists the ids of a user's API tokens and login sessions.
func (tx *Tx) Credentials(userID string) (tokens, sessions []string) {
	return tx.prefixKeys(bUserTokens, key(userID, "")), tx.prefixKeys(bUserSessions, key(userID, ""))
}

// Session returns a session by id.
func (tx *Tx) Session(id string) (*Session, error) {
	return getRec[Session](tx, KindSession, id, "session")
}
