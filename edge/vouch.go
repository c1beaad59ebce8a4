package edge

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/auth"
)

// vouches asks an origin about JWTs this edge cannot verify (an origin's
// session tokens, and registry tokens it issued for pushes through the
// edge) and remembers each verdict: a yes for the token's remaining life,
// a no for vouchNo, so a token costs one round trip to an origin however
// often it is presented. Tokens are kept as hashes, never as presented.
type vouches struct {
	ask func(ctx context.Context, tok string) (protocol.Vouch, error)
	now func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]vouchEntry
	asking  chan struct{} // bounds the questions in flight to the origins
}

type vouchEntry struct {
	claims *auth.Claims // nil: refused
	until  time.Time
}

const (
	vouchNo      = 10 * time.Second
	vouchMax     = 10000 // entries remembered
	vouchTimeout = 5 * time.Second
	vouchAsking  = 16 // questions to the origins at once
)

func newVouches(ask func(ctx context.Context, tok string) (protocol.Vouch, error), now func() time.Time) *vouches {
	return &vouches{ask: ask, now: now, entries: map[[32]byte]vouchEntry{}, asking: make(chan struct{}, vouchAsking)}
}

// Remote is auth.Authenticator.Remote.
func (v *vouches) Remote(ctx context.Context, tok string) (*auth.Claims, error) {
	key := sha256.Sum256([]byte(tok))
	now := v.now()
	v.mu.Lock()
	e, ok := v.entries[key]
	v.mu.Unlock()
	if !ok || !now.Before(e.until) {
		// Only a token that could be one of ours is worth a question, and
		// only a few are asked at once: garbage costs the origins nothing.
		if !auth.Plausible(tok, now) {
			return nil, auth.ErrBadCredentials
		}
		ctx, cancel := context.WithTimeout(ctx, vouchTimeout)
		defer cancel()
		select {
		case v.asking <- struct{}{}:
		case <-ctx.Done():
			return nil, auth.ErrUnverifiable
		}
		verdict, err := v.ask(ctx, tok)
		<-v.asking
		if err != nil {
			return nil, auth.ErrUnverifiable
		}
		e = vouchEntry{until: now.Add(vouchNo)}
		if verdict.Valid && verdict.Claims.ExpiresAt != nil {
			e = vouchEntry{claims: verdict.Claims, until: verdict.Claims.ExpiresAt.Time}
		}
		v.put(key, e, now)
	}
	if e.claims == nil {
		return nil, auth.ErrBadCredentials
	}
	c := *e.claims // the caller's to keep
	return &c, nil
}

func (v *vouches) put(key [32]byte, e vouchEntry, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.entries) >= vouchMax {
		for k, old := range v.entries {
			if !now.Before(old.until) {
				delete(v.entries, k)
			}
		}
		for k := range v.entries { // still full: any one goes
			if len(v.entries) < vouchMax {
				break
			}
			delete(v.entries, k)
		}
	}
	v.entries[key] = e
}
