package edge

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/auth"
)

// TestVouches: an origin is asked once per plausible token, the verdict
// kept for the token's life (a refusal for vouchNo); garbage is never
// asked about; an origin that cannot be reached makes the token
// unverifiable (not refused, not remembered); few questions go at once.
func TestVouches(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	origin := auth.NewJWT([]byte("origin-secret-origin-secret-0123"), clock)
	good, exp, _ := origin.Issue(auth.AccessToken, "u1", "s1", 15*time.Minute)
	refused, _, _ := origin.Issue(auth.AccessToken, "u1", "s2", 15*time.Minute)
	var asked atomic.Int64
	down := false
	v := newVouches(func(_ context.Context, tok string) (protocol.Vouch, error) {
		asked.Add(1)
		if down {
			return protocol.Vouch{}, errors.New("connection refused")
		}
		c, err := origin.Parse(tok, auth.AccessToken)
		if err != nil || c.Session == "s2" {
			return protocol.Vouch{}, nil
		}
		return protocol.Vouch{Valid: true, Claims: c}, nil
	}, clock)
	ctx := context.Background()

	for range 3 {
		if c, err := v.Remote(ctx, good); err != nil || c.Subject != "u1" {
			t.Fatalf("a good token: %+v, %v", c, err)
		}
	}
	if asked.Load() != 1 {
		t.Fatalf("asked %d times about one token", asked.Load())
	}
	for range 2 {
		if _, err := v.Remote(ctx, refused); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("a refused token: %v", err)
		}
	}
	if asked.Load() != 2 {
		t.Fatalf("asked %d times, want the refusal remembered", asked.Load())
	}
	for _, junk := range []string{"x.y.z", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln", ""} {
		if _, err := v.Remote(ctx, junk); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("garbage %q: %v", junk, err)
		}
	}
	if asked.Load() != 2 {
		t.Fatal("asked about garbage")
	}

	// The refusal ends after vouchNo, the verdict with the token.
	now = now.Add(vouchNo + time.Second)
	_, _ = v.Remote(ctx, refused)
	if asked.Load() != 3 {
		t.Fatalf("a refusal outlived %v", vouchNo)
	}
	down = true
	if _, err := v.Remote(ctx, good); err != nil {
		t.Fatalf("a good token before its expiry, origin down: %v", err)
	}
	now = exp.Add(time.Second)
	fresh, _, _ := origin.Issue(auth.AccessToken, "u1", "s1", 15*time.Minute)
	for range 2 {
		if _, err := v.Remote(ctx, fresh); !errors.Is(err, auth.ErrUnverifiable) {
			t.Fatalf("origin down: %v, want unverifiable", err)
		}
	}
	if asked.Load() != 5 {
		t.Fatalf("asked %d times: an unverifiable token must be asked about again", asked.Load())
	}
}

// TestVouchesBounded: questions to the origins in flight are bounded.
func TestVouchesBounded(t *testing.T) {
	now := time.Now()
	origin := auth.NewJWT([]byte("origin-secret-origin-secret-0123"), nil)
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	v := newVouches(func(ctx context.Context, tok string) (protocol.Vouch, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		return protocol.Vouch{}, nil
	}, func() time.Time { return now })
	var wg sync.WaitGroup
	for i := range 3 * vouchAsking {
		tok, _, _ := origin.Issue(auth.AccessToken, "u1", "s"+string(rune('a'+i)), time.Hour)
		wg.Go(func() { _, _ = v.Remote(context.Background(), tok) })
	}
	// Let every question that can go go, then a little more.
	for deadline := time.Now().Add(5 * time.Second); inFlight.Load() < vouchAsking && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	if most.Load() != vouchAsking {
		t.Fatalf("%d questions at once, want %d (the bound, reached)", most.Load(), vouchAsking)
	}
}
