// Package keylock serialises work per key (a package, an image, an
// upload) in one process.
package keylock

import "sync"

// Lock serialises work per key on this node. For a format's writes it is
// an optimisation only: writes decided on another node are kept apart by
// the preconditions format.Writer.Decide attaches to every command, so
// there it spares the wasted attempts of two local writes of one package.
// A blob store uses it for what only it holds (its uploads' files).
// Entries exist only while someone holds or waits for them. The zero
// Lock is ready to use.
type Lock struct {
	mu   sync.Mutex
	keys map[string]*keyEntry
}

type keyEntry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key and returns its unlock function.
func (l *Lock) Lock(key string) (unlock func()) {
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
