package diskspace_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/diskspace"
)

// fakeDisk is an injected statfs: free space the test sets, calls counted.
type fakeDisk struct {
	mu    sync.Mutex
	free  uint64
	err   error
	calls int
}

func (d *fakeDisk) stat(string) (diskspace.Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return diskspace.Usage{Free: d.free, Total: 100 << 30}, d.err
}

func (d *fakeDisk) set(free uint64, err error) {
	d.mu.Lock()
	d.free, d.err = free, err
	d.mu.Unlock()
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

const minFree = 2 << 30

func newGuard(free uint64) (*diskspace.Guard, *fakeDisk, *clock) {
	d := &fakeDisk{free: free}
	c := &clock{now: time.Unix(1700000000, 0)}
	return diskspace.New(diskspace.Config{Dir: "/data", MinFree: minFree, Stat: d.stat, Now: c.Now}), d, c
}

func TestAdmit(t *testing.T) {
	g, disk, c := newGuard(3 << 30)
	for _, n := range []int64{0, -1, 1 << 30} {
		if err := g.Admit(n); err != nil {
			t.Errorf("Admit(%d) with 1 GiB above the minimum: %v", n, err)
		}
	}
	// A declared length that would cross the minimum is refused up front.
	if err := g.Admit(1<<30 + 1); !errors.Is(err, blob.ErrNoSpace) {
		t.Errorf("Admit(1 GiB + 1): err = %v, want ErrNoSpace", err)
	}
	disk.set(minFree-1, nil)
	c.Advance(time.Second)
	if err := g.Admit(0); !errors.Is(err, blob.ErrNoSpace) {
		t.Errorf("Admit(0) below the minimum: err = %v, want ErrNoSpace", err)
	}
	if st := g.Status(); !slices.Equal(st.Reasons, []string{diskspace.ReasonLow}) || st.Free != minFree-1 || st.MinFree != minFree {
		t.Errorf("Status below the minimum = %+v", st)
	}
	disk.set(minFree, nil)
	c.Advance(time.Second)
	if err := g.Admit(0); err != nil {
		t.Errorf("Admit(0) at the minimum: %v", err)
	}
	if st := g.Status(); len(st.Reasons) != 0 {
		t.Errorf("Status at the minimum = %+v, want healthy", st)
	}
}

// TestCache: statfs is asked at most once per second of the injected
// clock, so checking on every read of an upload costs nothing.
func TestCache(t *testing.T) {
	g, disk, c := newGuard(3 << 30)
	for range 100 {
		_ = g.Admit(0)
	}
	if disk.calls != 1 {
		t.Fatalf("statfs called %d times within one second, want 1", disk.calls)
	}
	disk.set(0, nil)
	if err := g.Admit(0); err != nil {
		t.Fatalf("cached answer not used: %v", err)
	}
	c.Advance(time.Second)
	if err := g.Admit(0); !errors.Is(err, blob.ErrNoSpace) || disk.calls != 2 {
		t.Fatalf("after a second: err %v, %d statfs calls", err, disk.calls)
	}
}

// TestReader: a body of unknown length stops with ErrNoSpace once free
// space drops below the minimum while it streams.
func TestReader(t *testing.T) {
	g, disk, c := newGuard(3 << 30)
	r := g.Reader(bytes.NewReader(make([]byte, 10)))
	buf := make([]byte, 4)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	disk.set(1<<30, nil)
	c.Advance(time.Second)
	if _, err := io.ReadAll(r); !errors.Is(err, blob.ErrNoSpace) {
		t.Fatalf("read after the disk filled up: err = %v, want ErrNoSpace", err)
	}
}

// TestObserve: a write that hit a full disk degrades the node for five
// minutes; the guard's own refusals and other errors do not.
func TestObserve(t *testing.T) {
	g, _, c := newGuard(3 << 30)
	g.Observe(errors.New("permission denied"))
	g.Observe(blob.ErrNoSpace)
	if st := g.Status(); len(st.Reasons) != 0 {
		t.Fatalf("Status = %+v, want healthy", st)
	}
	g.Observe(blob.NoSpace(syscall.ENOSPC))
	if st := g.Status(); !slices.Equal(st.Reasons, []string{diskspace.ReasonWriteFailed}) {
		t.Fatalf("Status after ENOSPC = %+v", st)
	}
	c.Advance(5*time.Minute - time.Second)
	if st := g.Status(); !slices.Equal(st.Reasons, []string{diskspace.ReasonWriteFailed}) {
		t.Fatalf("Status a second short of five minutes = %+v", st)
	}
	c.Advance(time.Second)
	if st := g.Status(); len(st.Reasons) != 0 {
		t.Fatalf("Status five minutes later = %+v, want healthy", st)
	}
}

// TestStatError: when free space cannot be read, uploads are admitted
// (the write itself will tell) and health says so.
func TestStatError(t *testing.T) {
	g, disk, _ := newGuard(0)
	disk.set(0, syscall.EIO)
	if err := g.Admit(1 << 40); err != nil {
		t.Fatalf("Admit with statfs failing: %v", err)
	}
	if st := g.Status(); !slices.Equal(st.Reasons, []string{diskspace.ReasonUnreadable}) {
		t.Fatalf("Status = %+v", st)
	}
}

func TestDisabled(t *testing.T) {
	disk := &fakeDisk{}
	g := diskspace.New(diskspace.Config{Dir: "/data", Stat: disk.stat})
	if err := g.Admit(1 << 40); err != nil {
		t.Fatalf("Admit with no minimum: %v", err)
	}
	if st := g.Status(); len(st.Reasons) != 0 {
		t.Fatalf("Status with no minimum = %+v", st)
	}
}

func TestStatReal(t *testing.T) {
	u, err := diskspace.Stat(t.TempDir())
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil || u.Total == 0 || u.Free > u.Total {
		t.Fatalf("Stat = %+v, %v", u, err)
	}
	if _, err := diskspace.Stat(t.TempDir() + "/missing"); err == nil {
		t.Fatal("Stat of a missing directory succeeded")
	}
}
