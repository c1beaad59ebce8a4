package progress

import (
	"github.com/depot-registry/depot/shared/syncbuf"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTrackerLogsWhileRunning(t *testing.T) {
	var out syncbuf.Buffer
	tr := New("blob_repair", slog.New(slog.NewTextHandler(&out, nil)))
	tr.every = 20 * time.Millisecond
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	tr.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }

	tr.Start(10)
	mu.Lock()
	clock = clock.Add(4 * time.Second)
	mu.Unlock()
	tr.Add(2, 0, 4000)
	st := tr.Status()
	if !st.Running || st.Done != 2 || st.Total != 10 || st.BytesPerSecond != 1000 || st.ETASeconds == nil || *st.ETASeconds != 16 {
		t.Fatalf("status while running = %+v (eta %v)", st, st.ETASeconds)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "blob_repair in progress") {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line logged: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	line := out.String()
	for _, want := range []string{"done=2", "total=10", "bytes=4000", "bytes_per_second=1000", "eta=16s"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %s", line, want)
		}
	}
	tr.Add(9, 1, 10) // more than announced: the total grows with it
	tr.End()
	st = tr.Status()
	if st.Running || st.Done != 11 || st.Total != 11 || st.Failed != 1 || st.ETASeconds != nil || st.EndedAt == nil {
		t.Fatalf("status after End = %+v", st)
	}
	if !strings.Contains(out.String(), "blob_repair done") {
		t.Errorf("a run that logged progress does not log its end: %q", out.String())
	}
}

func TestTrackerQuietWhenShort(t *testing.T) {
	var out syncbuf.Buffer
	tr := New("gc", slog.New(slog.NewTextHandler(&out, nil)))
	tr.Start(0)
	tr.Grow(3)
	tr.Add(3, 0, 0)
	tr.End()
	if out.String() != "" {
		t.Errorf("a run shorter than Every logged: %q", out.String())
	}
	if st := tr.Status(); st.Done != 3 || st.Total != 3 {
		t.Errorf("status = %+v", st)
	}
	var none *Tracker
	none.Start(1)
	none.Add(1, 0, 1)
	none.End()
	if none.Status().Running {
		t.Error("a nil tracker runs")
	}
}
