package format

import "sync"

// KeyLock serialises work per key (a package, an image, an upload
// session) on this node. It is an optimisation only: writes decided on
// another node are kept apart by the preconditions Writer.Decide attaches
// to every command, so here it just spares the wasted attempts of two
// local writes of one package. Entries exist only while someone holds or
// waits for them.
type KeyLock struct {
	mu   sync.Mutex
	keys map[string]*keyEntry
}

type keyEntry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key and returns its unlock function.
func (l *KeyLock) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*keyEntry{}
	}
	e := l.keys[key]
	if e == nil {
		e = &keyEntry{}
		l.keys[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.keys, key)
		}
		l.mu.Unlock()
	}
}
