package auth

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/ratelimit"
)

// Bounds on presented credentials, checked before any work is done with
// them (a lookup, a hash, a rate-limiter key, an audit line).
const (
	MaxUsernameBytes = 256
	MaxSecretBytes   = 1024 // passwords and API tokens; JWTs have maxJWTLen
	maxHeaderBytes   = maxJWTLen + 512
)

// ErrBusy means no password check could start before the request's
// deadline: the node is verifying as many passwords as it has cores.
var ErrBusy = errors.New("auth: too many password checks at once")

// ThrottledError refuses a password check for an address or username that
// failed too often in the current window.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed sign-ins; retry in %d seconds", ratelimit.Seconds(e.RetryAfter))
}

// Hasher runs argon2id with bounded concurrency. Each check takes
// DefaultPasswordParams.Memory (19 MiB) for its duration, so unbounded
// concurrent checks are a memory switch anyone can flip with bad passwords;
// with at most one per core, memory is bounded and throughput is the same.
// Checks from addresses that failed recently wait for slots of their own,
// so a flood of guesses queues behind itself, not in front of a good login
// from elsewhere.
type Hasher struct {
	slots   chan struct{} // for everyone
	suspect chan struct{} // for addresses with recent failures
	// MaxWait bounds queueing when the request has no deadline of its own.
	MaxWait time.Duration
	// Params are the argon2id parameters of new hashes; zero means
	// DefaultPasswordParams. Verification reads them from each hash.
	Params PasswordParams
}

// NewHasher allows n concurrent checks (and half as many, at least one,
// more for suspect addresses); n <= 0 means one per core.
func NewHasher(n int) *Hasher {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return &Hasher{slots: make(chan struct{}, n), suspect: make(chan struct{}, max(1, n/2)), MaxWait: 10 * time.Second}
}

// acquire takes a slot, waiting at most until ctx ends or MaxWait. While
// suspect reports true the caller waits in the suspect pool; it is asked
// again once a general slot is won, since an address can turn suspect
// while its requests queue (a burst arrives before its first failure).
func (h *Hasher) acquire(ctx context.Context, suspect func() bool) (release func(), err error) {
	if h == nil {
		return func() {}, nil
	}
	if _, ok := ctx.Deadline(); !ok && h.MaxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.MaxWait)
		defer cancel()
	}
	pool := h.slots
	if suspect != nil && suspect() {
		pool = h.suspect
	}
	for {
		select {
		case pool <- struct{}{}:
		case <-ctx.Done():
			return nil, ErrBusy
		}
		if pool == h.suspect || suspect == nil || !suspect() {
			p := pool
			return func() { <-p }, nil
		}
		<-pool
		pool = h.suspect
	}
}

// Verify checks pw against an encoded hash in a slot.
func (h *Hasher) Verify(ctx context.Context, encoded, pw string) (bool, error) {
	release, err := h.acquire(ctx, nil)
	if err != nil {
		return false, err
	}
	defer release()
	return VerifyPassword(encoded, pw), nil
}

// Hash hashes pw with h.Params in a slot.
func (h *Hasher) Hash(ctx context.Context, pw string) (string, error) {
	release, err := h.acquire(ctx, nil)
	if err != nil {
		return "", err
	}
	defer release()
	return HashPasswordWith(h.Params.OrDefault(), pw)
}

// Guard counts failed credential checks per client address and per
// address and username, and refuses password checks past the limits, so
// a burst of bad passwords costs a map lookup instead of an argon2 run.
// Keying the username limit by address too means nobody can lock a user
// out from elsewhere.
//
// A request an edge node forwarded (ThroughNode) names its client's
// address on the node's word: its failures count against the node as
// well, per node (NodeFactor times an address's limit: a node serves
// many clients) and per node and username (an address's limit), so
// whoever holds a node's credential and makes up addresses still gets no
// more guesses at a password than one address does.
type Guard struct {
	perUser *ratelimit.Limiter
	perAddr *ratelimit.Limiter
	perNode *ratelimit.Limiter
	now     func() time.Time
}

// NodeFactor is how many times an address's failure limit the clients
// behind one edge node may spend together.
const NodeFactor = 20

// NewGuard allows perUser failures per address and username and perAddr
// failures per address in each window; 0 disables a limit.
func NewGuard(perUser, perAddr int, window time.Duration, now func() time.Time) *Guard {
	if now == nil {
		now = time.Now
	}
	return &Guard{perUser: ratelimit.New(perUser, window, now), perAddr: ratelimit.New(perAddr, window, now),
		perNode: ratelimit.New(perAddr*NodeFactor, window, now), now: now}
}

// SetLimits changes the failures allowed per address and username, and
// the windows (run-time settings).
func (g *Guard) SetLimits(perUser int, window time.Duration) {
	g.perUser.SetLimit(perUser, window)
	for _, l := range []*ratelimit.Limiter{g.perAddr, g.perNode} {
		l.SetLimit(l.Limit(), window)
	}
}

type nodeKey struct{}

// ThroughNode marks ctx as a request edge node forwarded (see Guard).
func ThroughNode(ctx context.Context, node string) context.Context {
	if node == "" {
		return ctx
	}
	return context.WithValue(ctx, nodeKey{}, node)
}

// NodeOf is the edge node ctx's request came through, or "".
func NodeOf(ctx context.Context) string {
	n, _ := ctx.Value(nodeKey{}).(string)
	return n
}

func userKey(remote, user string) string { return remote + "\x00" + strings.ToLower(user) }

// Check refuses when a limit is spent.
func (g *Guard) Check(ctx context.Context, remote, user string) error {
	if g == nil {
		return nil
	}
	ds := []ratelimit.Decision{g.perAddr.Peek(remote), g.perUser.Peek(userKey(remote, user))}
	if node := NodeOf(ctx); node != "" {
		ds = append(ds, g.perNode.Peek(node), g.perUser.Peek(userKey("edge:"+node, user)))
	}
	for _, d := range ds {
		if !d.Allowed {
			return &ThrottledError{RetryAfter: d.RetryAfter(g.now())}
		}
	}
	return nil
}

// Suspect reports whether remote failed a check in the current window.
func (g *Guard) Suspect(remote string) bool {
	if g == nil {
		return false
	}
	d := g.perAddr.Peek(remote)
	return d.Limit > 0 && d.Remaining < d.Limit-1
}

// Fail counts one failed check.
func (g *Guard) Fail(ctx context.Context, remote, user string) {
	if g == nil {
		return
	}
	g.perAddr.Allow(remote)
	if user != "" {
		g.perUser.Allow(userKey(remote, user))
	}
	if node := NodeOf(ctx); node != "" {
		g.perNode.Allow(node)
		if user != "" {
			g.perUser.Allow(userKey("edge:"+node, user))
		}
	}
}

// Failure describes a failed credential check, for the audit log. It never
// holds the secret; Username is as presented (bounded only by the header's
// size): clip it before echoing it.
type Failure struct {
	Remote   string
	Username string
	Scheme   string // basic, bearer, token, login
	Reason   string // bad_credentials, throttled, busy
}
