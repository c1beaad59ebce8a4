package membership

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// memberlist logs a line per event through a standard logger, and some
// events are anyone's to cause: each packet that fails to decrypt (a
// stranger's, a spoofed one, a node's with another key) is a line
// "[ERR] memberlist: Decrypt packet failed: ... from=<address>". throttle
// passes each kind of line at most once per interval and counts the ones
// it holds back, so a flood of such packets costs a map lookup each, not
// a log line (nor the JSON round trip of the hclog bridge).

// errUndecryptable is memberlist's word for a message sealed with
// another key.
const errUndecryptable = "no installed keys could decrypt the message"

// logEvery is how often a kind of memberlist line may be logged.
const logEvery = time.Minute

// maxLineKinds bounds the kinds throttle remembers. memberlist's formats
// make a few dozen; a kind is cut before anything a packet chose.
const maxLineKinds = 256

type throttle struct {
	w     io.Writer
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*lineKind
}

type lineKind struct {
	next    time.Time // when the next line of the kind may pass
	dropped int       // lines held back since the last one passed
}

func newThrottle(w io.Writer, every time.Duration, now func() time.Time) *throttle {
	return &throttle{w: w, every: every, now: now, kinds: map[string]*lineKind{}}
}

// Write is called with one line at a time (log.Logger's way).
func (t *throttle) Write(p []byte) (int, error) {
	kind := lineKindOf(p)
	now := t.now()
	t.mu.Lock()
	k := t.kinds[kind]
	if k == nil {
		if len(t.kinds) >= maxLineKinds {
			for s, k := range t.kinds {
				if !now.Before(k.next) && k.dropped == 0 {
					delete(t.kinds, s)
				}
			}
		}
		if len(t.kinds) >= maxLineKinds {
			t.mu.Unlock()
			return len(p), nil // not memberlist's formats: a flood of its own
		}
		k = &lineKind{}
		t.kinds[kind] = k
	}
	if now.Before(k.next) {
		k.dropped++
		t.mu.Unlock()
		return len(p), nil
	}
	dropped := k.dropped
	k.next, k.dropped = now.Add(t.every), 0
	t.mu.Unlock()
	line := p
	if bytes.Contains(p, []byte(errUndecryptable)) {
		line = fmt.Appendf(nil, "%s (sent by a node whose DEPOT_CLUSTER_KEY differs from this one's, or by a stranger: check the key of the node at that address)\n",
			bytes.TrimRight(line, "\n"))
	}
	if dropped > 0 {
		line = fmt.Appendf(nil, "%s (and %d more like it since the last one logged)\n", bytes.TrimRight(line, "\n"), dropped)
	}
	if _, err := t.w.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// lineKindOf is a line's level tag and its text up to the first colon,
// quote or digit: the fixed start of memberlist's format, before the
// error, address, number or label a packet put there.
func lineKindOf(p []byte) string {
	var level []byte
	if i := bytes.IndexByte(p, ']'); len(p) > 0 && p[0] == '[' && i > 0 && i < 10 {
		level, p = p[:i+1], p[i+1:]
	}
	p = bytes.TrimPrefix(bytes.TrimSpace(p), []byte("memberlist: "))
	if i := bytes.IndexAny(p, ":\"0123456789"); i >= 0 {
		p = p[:i]
	}
	if len(p) > 64 {
		p = p[:64]
	}
	return string(level) + " " + string(p)
}
