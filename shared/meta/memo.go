package meta

import (
	"math"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Memos: values decided from the store (who a credential is, whether a
// principal may read a repository, which artifact a path names), kept in
// memory until a write touches what they were decided from, so that a
// hot read path decodes no records while nothing it depends on changes,
// and a change (a token revoked, a grant removed) is seen by the very
// next request, as without the memo.
//
// Every write transaction of the store notes the kinds of the records it
// touched, and for the kinds a repository's records are watched by
// (artifacts, format keys) the repository, with a change number taken
// before it commits; once it has committed, the number becomes visible.
// A memo entry remembers the visible number at which it was decided (read
// before the view it was decided in), and holds while no kind or
// repository it depends on carries a later number.

// changeMarks are the change numbers of what writes touched.
type changeMarks struct {
	issued  atomic.Uint64 // the last number handed to a write transaction
	visible atomic.Uint64 // the last number whose transaction has committed
	all     atomic.Uint64 // a write that touched everything (a restore)
	kind    [math.MaxUint8 + 1]atomic.Uint64
	mu      sync.RWMutex
	repo    map[repoMark]uint64
}

type repoMark struct {
	kind Kind
	repo string
}

// watchedByRepo are the kinds whose changes are also noted per
// repository.
func watchedByRepo(k Kind) bool { return k == KindArtifact || k == KindKV }

// touched is what one write transaction changed.
type touched struct {
	kinds [4]uint64 // a bit per kind
	repos map[repoMark]struct{}
	all   bool
}

func (t *touched) add(k Kind, repo string) {
	t.kinds[k/64] |= 1 << (k % 64)
	if repo != "" && watchedByRepo(k) {
		if t.repos == nil {
			t.repos = map[repoMark]struct{}{}
		}
		t.repos[repoMark{k, repo}] = struct{}{}
	}
}

// note marks what t touched with the next number, before its
// transaction commits; published makes it visible after.
func (m *changeMarks) note(t *touched) uint64 {
	n := m.issued.Add(1)
	if t.all {
		m.all.Store(n)
	}
	for k := range 256 {
		if t.kinds[k/64]&(1<<(k%64)) != 0 {
			m.kind[k].Store(n)
		}
	}
	if len(t.repos) > 0 {
		m.mu.Lock()
		if m.repo == nil {
			m.repo = map[repoMark]uint64{}
		}
		for r := range t.repos {
			m.repo[r] = n
		}
		m.mu.Unlock()
	}
	return n
}

// published makes change n visible (numbers only grow: transactions
// commit in the order they were numbered, bbolt having one writer, but
// their publishing may race).
func (m *changeMarks) published(n uint64) {
	for {
		v := m.visible.Load()
		if v >= n || m.visible.CompareAndSwap(v, n) {
			return
		}
	}
}

// update runs fn in a write transaction and notes what it touched.
func (s *Store) update(fn func(tx *Tx) error) error {
	var n uint64
	err := s.db.Update(func(btx *bolt.Tx) error {
		t := &touched{}
		tx := &Tx{tx: btx, touched: t}
		if err := fn(tx); err != nil {
			return err
		}
		if err := markIndexed(btx); err != nil {
			return err
		}
		n = s.marks.note(t)
		return nil
	})
	if err == nil && n > 0 {
		s.marks.published(n)
	}
	return err
}

// Memo remembers values of type V by key K, each decided from the store
// by a function given to Get, while nothing they depend on changed: any
// record of Kinds, or of RepoKinds in the repository the value was asked
// for. At most Max values are kept (an arbitrary one goes to make room).
// A value must not be changed by those it is given to, nor anything it
// shares (maps, slices) by copies of it.
type Memo[K comparable, V any] struct {
	s         *Store
	kinds     []Kind
	repoKinds []Kind
	max       int
	mu        sync.RWMutex
	m         map[K]memoEntry[V]
}

type memoEntry[V any] struct {
	v    V
	repo string
	at   uint64
}

// NewMemo is a memo over s of at most max values, depending on kinds,
// and on repoKinds in the repository each value is asked for (artifacts
// or format keys).
func NewMemo[K comparable, V any](s *Store, max int, kinds, repoKinds []Kind) *Memo[K, V] {
	for _, k := range repoKinds {
		if !watchedByRepo(k) {
			panic("meta: changes of this kind are not noted per repository")
		}
	}
	return &Memo[K, V]{s: s, kinds: kinds, repoKinds: repoKinds, max: max, m: map[K]memoEntry[V]{}}
}

// Get returns the value remembered for k (asked for in repository repo,
// "" for none) while it holds; otherwise decide's, decided in a view of
// the store and remembered when keep says so (an error is never
// remembered).
func (m *Memo[K, V]) Get(k K, repo string, decide func(tx *Tx) (v V, keep bool, err error)) (V, error) {
	if v, ok := m.lookup(k, repo, math.MaxUint64); ok {
		return v, nil
	}
	var v V
	err := m.s.View(func(tx *Tx) error {
		var err error
		v, err = m.decideIn(tx, k, repo, decide)
		return err
	})
	return v, err
}

// In is Get within a view of m's store the caller has open (Store.View):
// a value remembered is used only if it is what that view sees (decided
// no later than the view was opened). In any other transaction (a
// write's, or a view that tracks its reads for a decision) it only
// decides.
func (m *Memo[K, V]) In(tx *Tx, k K, repo string, decide func(tx *Tx) (v V, keep bool, err error)) (V, error) {
	if tx.store != m.s || tx.reads != nil {
		v, _, err := decide(tx)
		return v, err
	}
	if v, ok := m.lookup(k, repo, tx.viewedAt); ok {
		return v, nil
	}
	return m.decideIn(tx, k, repo, decide)
}

// lookup is the value remembered for k in repo, if it holds and was
// decided at change number at most upTo.
func (m *Memo[K, V]) lookup(k K, repo string, upTo uint64) (V, bool) {
	m.mu.RLock()
	e, ok := m.m[k]
	m.mu.RUnlock()
	if ok && e.repo == repo && e.at <= upTo && m.holds(e) {
		return e.v, true
	}
	var zero V
	return zero, false
}

// decideIn decides k in tx, a view opened when the visible change number
// was tx.viewedAt (so the value is at least that fresh), and remembers it
// when keep says so.
func (m *Memo[K, V]) decideIn(tx *Tx, k K, repo string, decide func(tx *Tx) (v V, keep bool, err error)) (V, error) {
	v, keep, err := decide(tx)
	if err != nil || !keep {
		return v, err
	}
	m.mu.Lock()
	if _, had := m.m[k]; !had && len(m.m) >= m.max {
		for old := range m.m {
			delete(m.m, old)
			break
		}
	}
	m.m[k] = memoEntry[V]{v: v, repo: repo, at: tx.viewedAt}
	m.mu.Unlock()
	return v, nil
}

// holds reports whether nothing e depends on changed since it was
// decided.
func (m *Memo[K, V]) holds(e memoEntry[V]) bool {
	marks := &m.s.marks
	if marks.all.Load() > e.at {
		return false
	}
	for _, k := range m.kinds {
		if marks.kind[k].Load() > e.at {
			return false
		}
	}
	if len(m.repoKinds) == 0 {
		return true
	}
	marks.mu.RLock()
	defer marks.mu.RUnlock()
	for _, k := range m.repoKinds {
		if marks.repo[repoMark{k, e.repo}] > e.at {
			return false
		}
	}
	return true
}

// Len is how many values the memo keeps.
func (m *Memo[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}
