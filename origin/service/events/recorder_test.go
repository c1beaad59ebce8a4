package events

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/depot-registry/depot/shared/meta"
)

// stuck commits nothing until released: no leader.
type stuck struct {
	mu      sync.Mutex
	open    chan struct{}
	batches [][]meta.Event
}

func (s *stuck) Apply(ctx context.Context, c meta.Command) (uint64, error) {
	select {
	case <-s.open:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, c.(*meta.EventsRecord).Events)
	return 1, nil
}

// TestRecorderBatchesAndCountsDrops: events wait in the queue while
// nothing can be committed; beyond its size they are dropped and counted,
// none before; then they go in batches.
func TestRecorderBatchesAndCountsDrops(t *testing.T) {
	c := &stuck{open: make(chan struct{})}
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	r := New(c, 5, slog.New(slog.NewTextHandler(io.Discard, nil)), dropped)
	r.Every = 10 * time.Millisecond
	e := meta.Event{Name: meta.EventArtifactDownloaded, Data: []byte(`{}`)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	// The recorder takes one batch out of the queue and waits on it.
	accepted := 0
	for range 20 {
		if r.Add(e) {
			accepted++
		}
		time.Sleep(time.Millisecond)
	}
	if got := testutil.ToFloat64(dropped); int(got) != 20-accepted || accepted < 5 {
		t.Fatalf("%d accepted, %v dropped: every event is either queued or counted, and the queue's room is used", accepted, got)
	}
	close(c.open)
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done
	n := 0
	for _, b := range c.batches {
		n += len(b)
	}
	if n != accepted {
		t.Errorf("%d events recorded, %d accepted", n, accepted)
	}
}
