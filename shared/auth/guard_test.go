package auth

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// TestHasherBoundsConcurrentChecks: with every slot taken, a check waits
// and gives up with ErrBusy when its request's deadline passes; a freed
// slot lets the next one run.
func TestHasherBoundsConcurrentChecks(t *testing.T) {
	h := NewHasher(2)
	enc, _ := HashPasswordWith(PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}, "pw-pw-pw-pw")
	r1, _ := h.acquire(context.Background(), nil)
	r2, _ := h.acquire(context.Background(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Verify(ctx, enc, "pw-pw-pw-pw"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third check ran while two held the slots: %v", err)
	}
	r1()
	if ok, err := h.Verify(context.Background(), enc, "pw-pw-pw-pw"); !ok || err != nil {
		t.Fatalf("check after a slot freed: %v %v", ok, err)
	}
	r2()
}

// TestGuardRefusesBeforeHashing: past the failure budget of an address, or
// of an address and username, the password is not checked at all (no
// hashing slot is taken), whatever it is; other addresses are unaffected.
func TestGuardRefusesBeforeHashing(t *testing.T) {
	store, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hash, _ := HashPasswordWith(PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}, "right-password")
	if err := store.Apply(1, &meta.UserCreate{User: meta.User{ID: "u1", Username: "alice", PasswordHash: hash, Role: meta.RoleUser}}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	var failures atomic.Int64
	a := &Authenticator{Meta: store, Now: clock, Cache: NewCredCache(time.Minute, 100, clock), Hasher: NewHasher(1),
		Guard:     NewGuard(3, 5, time.Minute, clock),
		OnFailure: func(context.Context, Failure) { failures.Add(1) }}
	ctx := context.Background()
	if _, err := a.Login(ctx, "alice", "right-password", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.Basic(ctx, "alice", "wrong", "192.0.2.1"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	// Hold the only slot: a check that got past the guard would block.
	release, _ := a.Hasher.acquire(ctx, nil)
	var th *ThrottledError
	if _, err := a.Basic(ctx, "alice", "right-password", "192.0.2.1"); !errors.As(err, &th) || th.RetryAfter <= 0 {
		t.Fatalf("right password past the username budget (even cached): %v", err)
	}
	release()
	if _, err := a.Basic(ctx, "alice", "right-password", "192.0.2.2"); err != nil {
		t.Fatalf("another address is not limited: %v", err)
	}
	// Distinct usernames from one address hit the address budget.
	for i := 0; i < 2; i++ {
		a.Basic(ctx, "nobody"+string(rune('a'+i)), "wrong", "192.0.2.1")
	}
	if _, err := a.Login(ctx, "somebody", "wrong", "192.0.2.1"); !errors.As(err, &th) {
		t.Fatalf("address past its budget: %v", err)
	}
	if failures.Load() != 3+1+2+1 {
		t.Fatalf("%d failures reported", failures.Load())
	}
	now = now.Add(time.Minute)
	if _, err := a.Login(ctx, "alice", "right-password", "192.0.2.1"); err != nil {
		t.Fatalf("a new window: %v", err)
	}
}

// TestSuspectAddressesQueueApart: checks from an address that failed
// recently wait for the suspect slot, leaving the general slots to
// everyone else, even when the address turned suspect while it queued.
func TestSuspectAddressesQueueApart(t *testing.T) {
	h := NewHasher(2)
	suspect := func() bool { return true }
	clean := func() bool { return false }
	held, _ := h.acquire(context.Background(), suspect) // the only suspect slot
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	if _, err := h.acquire(short(), suspect); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second suspect check ran: %v", err)
	}
	r1, err := h.acquire(short(), clean)
	if err != nil {
		t.Fatalf("a clean check waited behind suspects: %v", err)
	}
	// Clean when it queued, suspect when it won a slot: it gives the slot
	// back and waits for the suspect one.
	var flips atomic.Int32
	turning := func() bool { return flips.Add(1) > 1 }
	if _, err := h.acquire(short(), turning); !errors.Is(err, ErrBusy) {
		t.Fatalf("an address that turned suspect kept a general slot: %v", err)
	}
	if len(h.slots) != 1 {
		t.Fatalf("%d general slots taken, want 1", len(h.slots))
	}
	r1()
	held()

	now := time.Unix(1_800_000_000, 0)
	g := NewGuard(3, 5, time.Minute, func() time.Time { return now })
	if g.Suspect("192.0.2.1") {
		t.Fatal("suspect before any failure")
	}
	g.Fail(context.Background(), "192.0.2.1", "x")
	if !g.Suspect("192.0.2.1") || g.Suspect("192.0.2.2") {
		t.Fatal("suspect is per address, from the first failure")
	}
}
