package keylock

import (
	"sync"
	"testing"
)

func TestLock(t *testing.T) {
	var l Lock
	var wg sync.WaitGroup
	counts := map[string]*int{"a": new(int), "b": new(int), "c": new(int)}
	for i := 0; i < 200; i++ {
		key := []string{"a", "b", "c"}[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock(key)
			*counts[key]++ // the race detector fails this if a key were not serialised
			unlock()
		}()
	}
	wg.Wait()
	if *counts["a"]+*counts["b"]+*counts["c"] != 200 {
		t.Fatalf("counts %v", counts)
	}
	if len(l.keys) != 0 {
		t.Fatalf("%d entries left after every unlock", len(l.keys))
	}
}
