package blobs

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/progress"
)

// Local is the store an origin keeps its own blobs in, which Store
// decorates: a blob.Store whose uploads commit into it.
type Local interface {
	blob.Store
	blob.Ingester
}

// Member is an origin of the cluster.
type Member struct {
	ID     string // its node id
	Addr   string // its raft address, where its peers' RPC answers
	Voter  bool
	Leader bool
}

// Membership says who the origins are.
type Membership interface {
	// Members are the origins of the raft configuration, in its order.
	Members() ([]Member, error)
}

// MembersFunc is a Membership of a function.
type MembersFunc func() ([]Member, error)

// Members calls f.
func (f MembersFunc) Members() ([]Member, error) { return f() }

// Config is what a Store needs of its origin.
type Config struct {
	// Self is this origin's node id.
	Self string
	// Local is this origin's own store.
	Local Local
	// Members are the origins; Peers calls their RPC.
	Members Membership
	Peers   *peerrpc.Client
	// Placement decides where blobs live; nil is Everywhere.
	Placement Placement
	// MaxSize bounds a blob a peer pushes here (0: no bound): the
	// origin's upload limit.
	MaxSize int64
	// Referenced pages through the digests some record keeps, in order,
	// from after (""), limit at a time; next is "" after the last page.
	// Repair's list; without it Repair fetches nothing.
	Referenced func(after string, limit int) (digests []string, next string, err error)
	// ReferencedSince lists the digests referenced after a log index, in
	// index order, limit or so at a time, and the index to go on after
	// (meta.Tx.ReferencedSince); Applied is the index the store has
	// applied. With both, a repair pass checks only what was referenced
	// since the pass before; the first pass, and one after the voters
	// changed, walk Referenced whole.
	ReferencedSince func(after uint64, limit int) (digests []string, next uint64, err error)
	Applied         func() uint64
	// Grace is how long a copy placement does not put here stays after
	// it was last made recent (the bound on a write, as garbage
	// collection's grace); 0 is an hour.
	Grace time.Duration
	// Now is the local store's clock (time.Now when nil); After waits on
	// the wall clock for the repair loop (time.After when nil).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	Log   *slog.Logger
}

// Store is an origin's blob store with replication: Local's, every new
// blob on a quorum of the origins placement names before Put or Commit
// returns, the blobs missing here read from the peers that hold them.
type Store struct {
	Local // Stat, Keep, Delete, Walk, Sweep, Uploads, SweepUploads: this origin's
	cfg   Config
	place Placement
	// fetches is one fetch per digest however many readers ask.
	fetches singleflight.Group
	// Pushes that go on after a quorum holds their blob run under life,
	// which Close ends.
	life   context.Context
	end    context.CancelFunc
	mu     sync.Mutex
	closed bool
	pushes sync.WaitGroup
	// repair is where the last repair pass left off.
	repairMu sync.Mutex
	repair   repairMark
	// The repair's progress and counts (RepairStatus, RepairFigures).
	progress                                          *progress.Tracker
	missing, repairFetched, repairBytes, repairFailed atomic.Int64
}

var (
	_ blob.Store    = (*Store)(nil)
	_ blob.Ingester = (*Store)(nil)
)

// New decorates cfg.Local with replication.
func New(cfg Config) *Store {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	place := cfg.Placement
	if place == nil {
		place = Everywhere{}
	}
	life, end := context.WithCancel(context.Background())
	return &Store{Local: cfg.Local, cfg: cfg, place: place, life: life, end: end, progress: progress.New(RepairOperation, cfg.Log)}
}

// Close stops the pushes still running beyond a quorum (repair brings
// their blobs later) and waits for them to end; writes after it are not
// replicated: one that needs a peer fails with blob.ErrUnreplicated.
// It leaves Local open.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.end()
	s.pushes.Wait()
}

// background runs fn under the store's life, unless it is closed.
func (s *Store) background(fn func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.pushes.Go(func() { fn(s.life) })
	return true
}

// hold counts a peer's transfer into this store among the work Close
// waits for; its context ends with ctx or with the store's life. It is
// false once the store is closed.
func (s *Store) hold(ctx context.Context) (context.Context, func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, false
	}
	s.pushes.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() {
		stop()
		cancel()
		s.pushes.Done()
	}, true
}

// Put stores the blob here, then on a quorum of the origins placement
// names (blob.ErrUnreplicated when they cannot be reached).
func (s *Store) Put(ctx context.Context, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	info, err := s.Local.Put(ctx, r, opts)
	if err != nil {
		return info, err
	}
	return info, s.replicate(ctx, info.Digest, info.Size)
}

// members are the origins, this one always among them (as a non-voter
// when the configuration does not name it: it takes part in nothing
// raft counts, but keeps what it holds).
func (s *Store) members() ([]Member, error) {
	ms, err := s.cfg.Members.Members()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == s.cfg.Self }) {
		ms = append(ms, Member{ID: s.cfg.Self})
	}
	return ms, nil
}

// placedHere reports whether placement names this origin for digest.
func (s *Store) placedHere(digest string, members []Member) bool {
	return slices.ContainsFunc(s.place.Holders(digest, members), func(m Member) bool { return m.ID == s.cfg.Self })
}
