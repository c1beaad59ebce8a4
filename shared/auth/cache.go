package auth

import (
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// CredCache remembers recently verified credentials for a short TTL so Basic
// auth does not rerun argon2 on every blob download. Keys (typically
// "user:password") are hashed before storage, so raw passwords never sit in
// the map; the hash is keyed with a per-cache random secret so a memory dump
// cannot be attacked offline with a dictionary of plain SHA-256 values.
//
// It is bounded: when full, expired entries go first, then the oldest. Since
// every entry gets the same TTL, insertion order is also expiry order, so a
// FIFO list serves both. A nil or zero-sized cache caches nothing.
//
// Entries outlive password changes until they expire; callers should Purge
// (or keep the TTL short) when credentials change.
type CredCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	now   func() time.Time
	key   [32]byte
	items map[[32]byte]*list.Element
	order *list.List // of *credCacheEntry, oldest at front
}

type credCacheEntry struct {
	id  [32]byte
	val string
	exp time.Time
}

// NewCredCache returns a cache holding at most max entries for ttl each. now
// nil means time.Now. ttl <= 0 or max <= 0 yields a cache that stores nothing.
func NewCredCache(ttl time.Duration, max int, now func() time.Time) *CredCache {
	if now == nil {
		now = time.Now
	}
	c := &CredCache{ttl: ttl, max: max, now: now, items: map[[32]byte]*list.Element{}, order: list.New()}
	rand.Read(c.key[:])
	return c
}

// Get returns the value cached for key, if present and unexpired.
func (c *CredCache) Get(key string) (val string, ok bool) {
	if c.disabled() {
		return "", false
	}
	id := c.hash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return "", false
	}
	e := el.Value.(*credCacheEntry)
	if !c.now().Before(e.exp) {
		c.remove(el)
		return "", false
	}
	return e.val, true
}

// Put caches val under key for the cache's TTL, replacing any existing entry.
func (c *CredCache) Put(key, val string) {
	if c.disabled() {
		return
	}
	id := c.hash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if el, ok := c.items[id]; ok {
		c.remove(el)
	}
	// Drop expired entries from the front, then the oldest live ones if
	// still full.
	for c.order.Len() > 0 {
		front := c.order.Front()
		if c.order.Len() < c.max && now.Before(front.Value.(*credCacheEntry).exp) {
			break
		}
		c.remove(front)
	}
	c.items[id] = c.order.PushBack(&credCacheEntry{id: id, val: val, exp: now.Add(c.ttl)})
}

// Purge removes every entry, e.g. after a password change or user deletion.
func (c *CredCache) Purge() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.items)
	c.order.Init()
}

func (c *CredCache) disabled() bool { return c == nil || c.ttl <= 0 || c.max <= 0 }

func (c *CredCache) hash(key string) [32]byte {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(key))
	var id [32]byte
	m.Sum(id[:0])
	return id
}

// remove must be called with c.mu held.
func (c *CredCache) remove(el *list.Element) {
	delete(c.items, el.Value.(*credCacheEntry).id)
	c.order.Remove(el)
}
