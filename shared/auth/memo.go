package auth

import (
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Who a credential is, remembered (meta.Memo) while nothing it was
// decided from changes: an API token by its hash while no token or user
// changes, a login session by its id and subject while no session or
// user changes; the time a token or session expires is checked at each
// use. A refusal is not remembered. The memos exist when the
// authenticator's Meta is the store itself (origins and edges).

// MaxRememberedCredentials bounds each memo.
const MaxRememberedCredentials = 100_000

type credentialMemos struct {
	tokens   *meta.Memo[string, credential]
	sessions *meta.Memo[sessionKey, credential]
}

// credential is who a credential is, and until when (nil: no end).
type credential struct {
	p       Principal
	expires *time.Time
}

type sessionKey struct {
	session, subject string
	via              Credential
	vouched          bool
}

func (a *Authenticator) memos() *credentialMemos {
	a.memoOnce.Do(func() {
		if s, ok := a.Meta.(*meta.Store); ok {
			a.memo.tokens = meta.NewMemo[string, credential](s, MaxRememberedCredentials, []meta.Kind{meta.KindToken, meta.KindUser}, nil)
			a.memo.sessions = meta.NewMemo[sessionKey, credential](s, MaxRememberedCredentials, []meta.Kind{meta.KindSession, meta.KindUser}, nil)
		}
	})
	return &a.memo
}

// recall is who decide says a credential is, through memo when there is
// one, refused once it has expired.
func recall[K comparable](a *Authenticator, memo *meta.Memo[K, credential], k K, decide func(*meta.Tx) (credential, error)) (*Principal, error) {
	var c credential
	var err error
	if memo != nil {
		c, err = memo.Get(k, "", func(tx *meta.Tx) (credential, bool, error) {
			c, err := decide(tx)
			return c, err == nil, err
		})
	} else {
		err = a.Meta.View(func(tx *meta.Tx) error { var err error; c, err = decide(tx); return err })
	}
	if err != nil {
		return nil, err
	}
	if c.expires != nil && !a.now().Before(*c.expires) {
		return nil, ErrBadCredentials
	}
	p := c.p // the remembered one is shared
	return &p, nil
}
