package auth

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func (c *CredCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) != c.order.Len() {
		panic("CredCache map and list out of sync")
	}
	return len(c.items)
}

func TestCredCacheGetPut(t *testing.T) {
	clk := newTestClock()
	c := NewCredCache(time.Minute, 10, clk.now)
	if _, ok := c.Get("alice:pw"); ok {
		t.Fatal("hit on empty cache")
	}
	c.Put("alice:pw", "user-1")
	if v, ok := c.Get("alice:pw"); !ok || v != "user-1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	if _, ok := c.Get("alice:pw2"); ok {
		t.Fatal("hit for a different key")
	}
	c.Put("alice:pw", "user-2")
	if v, _ := c.Get("alice:pw"); v != "user-2" || c.size() != 1 {
		t.Fatalf("overwrite: got %q, size %d", v, c.size())
	}
}

func TestCredCacheTTL(t *testing.T) {
	clk := newTestClock()
	c := NewCredCache(time.Minute, 10, clk.now)
	c.Put("k", "v")
	clk.advance(time.Minute - time.Nanosecond)
	if _, ok := c.Get("k"); !ok {
		t.Fatal("entry expired early")
	}
	clk.advance(time.Nanosecond)
	if _, ok := c.Get("k"); ok {
		t.Fatal("entry served at its expiry time")
	}
	if c.size() != 0 {
		t.Error("expired entry not removed on Get")
	}
	// Re-putting refreshes the TTL.
	c.Put("k", "v")
	clk.advance(30 * time.Second)
	c.Put("k", "v")
	clk.advance(45 * time.Second)
	if _, ok := c.Get("k"); !ok {
		t.Error("Put did not refresh the TTL")
	}
}

func TestCredCacheBound(t *testing.T) {
	clk := newTestClock()
	c := NewCredCache(time.Minute, 3, clk.now)
	for i := range 3 {
		c.Put(fmt.Sprint("k", i), fmt.Sprint("v", i))
		clk.advance(time.Second)
	}
	c.Put("k3", "v3")
	if c.size() != 3 {
		t.Fatalf("size = %d, want 3", c.size())
	}
	if _, ok := c.Get("k0"); ok {
		t.Error("oldest entry not evicted")
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s evicted, want kept", k)
		}
	}
	// Updating an existing key while full must not evict anything else.
	c.Put("k2", "new")
	if c.size() != 3 {
		t.Errorf("size after update = %d", c.size())
	}
	for _, k := range []string{"k1", "k3"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s evicted by update of k2", k)
		}
	}
	// Expired entries are dropped when new ones arrive, so the map cannot
	// fill up with dead credentials.
	clk.advance(2 * time.Minute)
	c.Put("fresh", "v")
	if c.size() != 1 {
		t.Errorf("size after expiry = %d, want 1", c.size())
	}
	for i := range 1000 {
		c.Put(fmt.Sprint("many", i), "v")
	}
	if c.size() != 3 {
		t.Errorf("size after 1000 puts = %d, want 3", c.size())
	}
}

func TestCredCachePurge(t *testing.T) {
	c := NewCredCache(time.Minute, 10, nil)
	c.Put("a", "1")
	c.Put("b", "2")
	c.Purge()
	if _, ok := c.Get("a"); ok || c.size() != 0 {
		t.Error("Purge left entries behind")
	}
	c.Put("a", "1")
	if _, ok := c.Get("a"); !ok {
		t.Error("cache unusable after Purge")
	}
}

func TestCredCacheDisabled(t *testing.T) {
	var nilCache *CredCache
	nilCache.Put("a", "1")
	nilCache.Purge()
	if _, ok := nilCache.Get("a"); ok {
		t.Error("nil cache returned a hit")
	}
	for _, c := range []*CredCache{NewCredCache(0, 10, nil), NewCredCache(time.Minute, 0, nil)} {
		c.Put("a", "1")
		if _, ok := c.Get("a"); ok {
			t.Error("disabled cache returned a hit")
		}
	}
}

func TestCredCacheDoesNotKeepRawKeys(t *testing.T) {
	c := NewCredCache(time.Minute, 10, nil)
	const key = "alice:hunter2-very-secret"
	c.Put(key, "user-1")
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.items {
		if strings.Contains(string(id[:]), "hunter2") {
			t.Fatal("raw key stored")
		}
		if id == [32]byte{} {
			t.Fatal("zero key id")
		}
	}
	// Two caches hash the same key differently (per-cache HMAC key).
	other := NewCredCache(time.Minute, 10, nil)
	if c.hash(key) == other.hash(key) {
		t.Error("key hashes are not per-cache")
	}
}

func TestCredCacheConcurrent(t *testing.T) {
	c := NewCredCache(time.Minute, 50, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := fmt.Sprint(g, ":", i%80)
				c.Put(k, k)
				if v, ok := c.Get(k); ok && v != k {
					t.Errorf("Get(%q) = %q", k, v)
				}
				if i%97 == 0 {
					c.Purge()
				}
			}
		}()
	}
	wg.Wait()
	if n := c.size(); n > 50 {
		t.Errorf("size = %d, exceeds bound", n)
	}
}
